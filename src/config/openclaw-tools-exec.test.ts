import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ExecApprovals } from "../agent/exec-approvals.js";
import { systemClock } from "../infra/clock.js";
import { ConfigError, parseConfig } from "./load.js";

/*
 * OpenClaw's tools.exec: `security`, `ask`, and allowlist entries as objects with `pattern` (the shape of its
 * exec-approvals.json entries) load beside today's strings, and the patterns decide what runs unasked.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const ask = (approvals: ExecApprovals, command: string) =>
  approvals.check({
    command,
    cwd: "/tmp",
    agentId: "main",
    sessionKey: "agent:main:main",
    runId: "r1",
    signal: AbortSignal.abort(),
  });

describe("an OpenClaw tools.exec config", () => {
  it("openclaw-tools-exec-config-loads: security, ask and { pattern } allowlist entries load and decide", async () => {
    const config = parseConfig({
      tools: {
        exec: {
          security: "allowlist",
          ask: "on-miss",
          allowlist: [{ pattern: "git *" }, "ls *", { pattern: " npm test " }],
        },
      },
    });
    expect(config.tools.exec).toMatchObject({
      security: "allowlist",
      ask: "on-miss",
      allowlist: ["git *", "ls *", "npm test"],
    });
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-oc-exec-"));
    dirs.push(stateDir);
    const approvals = new ExecApprovals({
      config: config.tools.exec,
      defaultSecurity: "allowlist",
      stateDir,
      clock: systemClock,
    });
    expect(await ask(approvals, "git status")).toEqual({ allowed: true });
    expect(await ask(approvals, "npm test")).toEqual({ allowed: true });
    // a miss asks (the aborted signal answers at once: the run was aborted)
    expect(await ask(approvals, "rm -rf build")).toEqual({ allowed: false, reason: "the run was aborted" });
  });

  it("an allowlist entry of another shape is refused, naming the entry and both shapes", () => {
    const load = () => parseConfig({ tools: { exec: { allowlist: ["git *", { patern: "ls *" }, 7] } } });
    expect(load).toThrow(ConfigError);
    const message = (() => {
      try {
        load();
      } catch (err) {
        return (err as Error).message;
      }
    })();
    console.log(message);
    expect(message).toContain(
      'tools.exec.allowlist[1]: expected a glob pattern ("git *") or an OpenClaw allowlist entry ({ pattern: "git *" })',
    );
    expect(message).toContain("tools.exec.allowlist[2]");
  });
});
