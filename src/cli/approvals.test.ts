import { describe, expect, it } from "vitest";
import { approvalHelp, consoleApprovalUrl } from "./agent-remote.js";
import { formatApprovals } from "./approvals.js";

describe("how the CLI points at an approval", () => {
  it("the console URL is the gateway's HTTP origin with the Approvals route; user info and a query are dropped", () => {
    expect(consoleApprovalUrl("ws://127.0.0.1:18789", "ap-1")).toBe("http://127.0.0.1:18789/#/approvals/ap-1");
    expect(consoleApprovalUrl("wss://me:s3cret@gw.example:8443/ws?token=s3cret", "ap 2")).toBe(
      "https://gw.example:8443/#/approvals/ap%202",
    );
  });

  it("the commands repeat --url without a secret in it, and never a --token", () => {
    const lines = approvalHelp("wss://gw.example/ws?token=s3cret", "ap-1", {
      url: "wss://u:s3cret@gw.example/ws?t=s3cret",
    });
    expect(lines.join("\n")).not.toContain("s3cret");
    expect(lines).toContain("or here: loopgate approvals allow ap-1 --url wss://gw.example/ws");
  });

  it("a list shows what waits, why, where, how long and its console URL", () => {
    const now = Date.UTC(2026, 11, 2, 6, 0, 0);
    const text = formatApprovals(
      [
        {
          id: "ap-1",
          command: "rm -rf build",
          cwd: "/w",
          agentId: "main",
          sessionKey: "agent:main:main",
          runId: "r",
          security: "allowlist",
          ask: "on-miss",
          reason: '"rm -rf build" matches no tools.exec.allowlist pattern',
          createdAtMs: now - 5000,
          expiresAtMs: now + 65_000,
        },
      ],
      "ws://127.0.0.1:18789",
      now,
    );
    expect(text).toBe(
      [
        "ap-1  exec rm -rf build",
        '  why: "rm -rf build" matches no tools.exec.allowlist pattern',
        "  session agent:main:main · agent main · cwd /w · 1 m 05 s left (until 2026-12-02T06:01:05.000Z)",
        "  console: http://127.0.0.1:18789/#/approvals/ap-1",
      ].join("\n"),
    );
    expect(formatApprovals([], "ws://127.0.0.1:1", now)).toBe("no approvals waiting");
  });
});
