import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../infra/events.js";
import { createTerminalRenderer } from "./render.js";

function render(events: Array<Pick<AgentEvent, "stream" | "data">>) {
  let out = "";
  let err = "";
  const r = createTerminalRenderer({ out: (s) => (out += s), err: (s) => (err += s), errColor: false });
  for (const [i, e] of events.entries()) {
    r({ runId: "r", seq: i + 1, ts: 0, sessionKey: "s", ...e } as AgentEvent);
  }
  return { out, err };
}

describe("what the terminal shows of retries, fallbacks and compactions", () => {
  it("each retry, fallback and compaction is one stderr line; stdout keeps only the reply", () => {
    const { out, err } = render([
      { stream: "lifecycle", data: { phase: "start", startedAt: 0 } },
      { stream: "lifecycle", data: { phase: "retry", attempt: 1, delayMs: 1000, reason: "rate_limit", model: "a/m" } },
      { stream: "lifecycle", data: { phase: "fallback", from: "a/m", to: "b/m", reason: "rate_limit" } },
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
