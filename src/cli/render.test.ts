import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../infra/events.js";
import { createTerminalRenderer, formatSummary, type RenderTarget } from "./render.js";

function render(
  events: Array<Pick<AgentEvent, "stream" | "data"> & { ts?: number }>,
  opts: Pick<RenderTarget, "approvalHelp"> = {},
) {
  let out = "";
  let err = "";
  const r = createTerminalRenderer({ out: (s) => (out += s), err: (s) => (err += s), errColor: false, ...opts });
  for (const [i, e] of events.entries()) {
    r({ runId: "r", seq: i + 1, ts: 0, sessionKey: "s", ...e } as AgentEvent);
  }
  return { out, err };
}

describe("what the terminal shows of retries, fallbacks and compactions", () => {
  it("each retry, fallback, auth profile rotation and compaction is one stderr line; stdout keeps only the reply", () => {
    const { out, err } = render([
      { stream: "lifecycle", data: { phase: "start", startedAt: 0 } },
      { stream: "lifecycle", data: { phase: "retry", attempt: 1, delayMs: 1000, reason: "rate_limit", model: "a/m" } },
      { stream: "lifecycle", data: { phase: "fallback", from: "a/m", to: "b/m", reason: "rate_limit" } },
      { stream: "lifecycle", data: { phase: "auth_rotate", from: "b:one", to: "b:two", reason: "rate_limit" } },
      { stream: "compaction", data: { phase: "start", reason: "threshold", tokensBefore: 3017 } },
      {
        stream: "compaction",
        data: {
          phase: "end",
          reason: "threshold",
          completed: true,
          willRetry: true,
          tokensBefore: 3017,
          tokensAfter: 1296,
          outcome: "compacted",
        },
      },
      { stream: "assistant", data: { text: "Hi", delta: "Hi" } },
    ]);
    expect(out).toBe("Hi");
    expect(err.split("\n").filter(Boolean)).toEqual([
      "↻ a/m: rate_limit, retry 1 in 1.0 s",
      "↪ a/m failed (rate_limit); trying b/m",
      "⇄ auth profile b:one: rate_limit; using b:two",
      "⧉ compacted the conversation (threshold): about 3,017 → 1,296 tokens",
    ]);
  });

  it("an answer restarted after a retry says so on stderr before the new text", () => {
    const { out, err } = render([
      { stream: "assistant", data: { text: "Par", delta: "Par" } },
      { stream: "assistant", data: { text: "Full", delta: "Full", replace: true } },
    ]);
    expect(out).toBe("Par\nFull");
    expect(err).toBe("↻ the answer restarted; the text above is void\n");
  });
});

describe("what the terminal shows of reasoning, mid-run messages and the summary", () => {
  it("streamed reasoning goes to stderr behind a 💭 label, and the answer starts on stdout after it", () => {
    const { out, err } = render([
      { stream: "thinking", data: { text: "Two plus ", delta: "Two plus " } },
      { stream: "thinking", data: { text: "Two plus two.", delta: "two." } },
      { stream: "assistant", data: { text: "4", delta: "4" } },
    ]);
    expect(err).toBe("💭 Two plus two.\n");
    expect(out).toBe("4");
  });

  it("a reasoning block (on) is one labelled line per block; it is dimmed when stderr has colour", () => {
    const { err } = render([
      { stream: "thinking", data: { text: "first", delta: "first" } },
      { stream: "thinking", data: { text: "second", delta: "second" } },
    ]);
    expect(err).toBe("💭 first\n💭 second");
    let coloured = "";
    const r = createTerminalRenderer({ out: () => {}, err: (s) => (coloured += s), errColor: true });
    r({ runId: "r", seq: 1, ts: 0, sessionKey: "s", stream: "thinking", data: { text: "x", delta: "x" } });
    expect(coloured).toContain("\x1b[2m");
  });

  it("a message the model sent mid-run is printed on stdout as its own paragraph", () => {
    const { out } = render([
      { stream: "message", data: { text: "Working on it.", toolCallId: "c1" } },
      { stream: "assistant", data: { text: "Done.", delta: "Done." } },
    ]);
    expect(out).toBe("Working on it.\n\nDone.");
  });

  it("the summary names the model's display name and the estimated cost when the config gives them", () => {
    const base = { status: "ok", summary: "completed", result: { meta: { durationMs: 1500, usage: u } } };
    expect(formatSummary(base)).toBe("— ok · 7 tokens (in 3 / out 4) · 1.5 s");
    expect(
      formatSummary({ ...base, result: { meta: { ...base.result.meta, modelName: "Fast", costUsd: 0.0042 } } }),
    ).toBe("— ok · Fast · 7 tokens (in 3 / out 4) · ~$0.0042 · 1.5 s");
  });
});

const u = { input: 3, output: 4, total: 7 };

describe("what the terminal shows of a block-streamed run", () => {
  it("prints each block once as it is delivered, not the deltas too", () => {
    const { out, err } = render([
      { stream: "lifecycle", data: { phase: "start", startedAt: 0, blockStreaming: "text_end" } },
      { stream: "assistant", data: { text: "First para.\n\n", delta: "First para.\n\n" } },
      { stream: "assistant", data: { text: "First para.\n\nSecond.", delta: "Second." } },
      { stream: "block", data: { index: 0, text: "First para.\n\n" } },
      { stream: "block", data: { index: 1, text: "Second." } },
      {
        stream: "lifecycle",
        data: {
          phase: "end",
          startedAt: 0,
          endedAt: 1,
          status: "ok",
          stopReason: "stop",
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
      },
    ]);
    expect(out).toBe("First para.\n\nSecond.\n");
    expect(err).toBe("");
  });

  it("a block that voids the earlier ones says so once on stderr", () => {
    const { out, err } = render([
      { stream: "lifecycle", data: { phase: "start", startedAt: 0, blockStreaming: "text_end" } },
      { stream: "block", data: { index: 0, text: "Thrown away" } },
      { stream: "assistant", data: { text: "Kept", delta: "Kept", replace: true } },
      { stream: "block", data: { index: 1, text: "Kept", replace: true } },
    ]);
    expect(out).toBe("Thrown away\nKept");
    expect(err).toBe("↻ the answer restarted; the text above is void\n");
  });
});

describe("what the terminal shows of an exec approval", () => {
  it("a command waiting for approval says why, its id and how long it may wait; its end is one line", () => {
    const expiresAtMs = new Date(2026, 0, 1, 14, 2, 0).getTime();
    const { out, err } = render(
      [
        {
          stream: "lifecycle",
          ts: expiresAtMs - 120_000,
          data: {
            phase: "waiting",
            for: "approval",
            approvalId: "ap-7",
            command: "rm -rf build",
            expiresAtMs,
            reason: '"rm -rf build" matches no tools.exec.allowlist pattern',
          },
        },
        { stream: "lifecycle", data: { phase: "resumed", for: "approval", approvalId: "ap-7", status: "expired" } },
      ],
      { approvalHelp: (id) => [`loopgate approvals allow ${id}`] },
    );
    expect(out).toBe("");
    expect(err).toBe(
      [
        '⏸ exec `rm -rf build` waits for approval: "rm -rf build" matches no tools.exec.allowlist pattern',
        "  id ap-7 · denied unless answered within 120 s (by 14:02:00)",
        "  loopgate approvals allow ap-7",
        "✗ approval ap-7 expired: nobody answered in time, so it was denied",
        "",
      ].join("\n"),
    );
  });
});

describe("what the terminal shows of the exec policy behind an approval", () => {
  it("the waiting line says whether the run is sandboxed and why the policy asks", () => {
    const expiresAtMs = new Date(2026, 0, 1, 14, 2, 0).getTime();
    const reason =
      'not sandboxed (agents.defaults.sandbox.mode is "off"): tools.exec.security "allowlist" (the default)';
    const { err } = render([
      {
        stream: "lifecycle",
        ts: expiresAtMs - 120_000,
        data: {
          phase: "waiting",
          for: "approval",
          approvalId: "ap-8",
          command: "echo hi",
          expiresAtMs,
          reason: '"echo hi" matches no tools.exec.allowlist pattern',
          sandbox: { sandboxed: false, reason },
        },
      },
    ]);
    expect(err.split("\n").slice(0, 3)).toEqual([
      '⏸ exec `echo hi` waits for approval: "echo hi" matches no tools.exec.allowlist pattern',
      `  ${reason}`,
      "  id ap-8 · denied unless answered within 120 s (by 14:02:00)",
    ]);
  });
});

describe("what the terminal shows of a tool result", () => {
  it("an image result names the image that was sent instead of counting lines", () => {
    const { err } = render([
      { stream: "tool", data: { phase: "start", name: "read", toolCallId: "c1", args: { path: "shot.png" } } },
      {
        stream: "tool",
        data: {
          phase: "result",
          name: "read",
          toolCallId: "c1",
          isError: false,
          result: "shot.png: image/png 4000×3000 → sent as 1200×900, 20.1 KiB",
          images: [{ type: "image", mimeType: "image/png", bytes: 20580, width: 1200, height: 900, omitted: true }],
        },
      },
    ]);
    expect(err).toBe("⚙ read shot.png → ok (image/png 1200×900)\n");
  });
});
