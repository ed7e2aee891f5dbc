import { describe, expect, it } from "vitest";
import type { Clock } from "../infra/clock.js";
import type { AgentEvent } from "../infra/events.js";
import type { ChatEventPayload } from "../protocol/payloads.js";
import { ChatProjector } from "./chat-projection.js";

/** Time stands still: a paced delta waits for the terminal event, which flushes it. */
const stillClock: Clock = { now: () => 1_000, setTimeout: () => ({}), clearTimeout: () => {} };

describe("chat projection of a message the model sent with the message tool", () => {
  it("reaches chat clients at once, as its own paragraph of the run's chat message", () => {
    const sent: ChatEventPayload[] = [];
    const chat = new ChatProjector({ emit: (p) => sent.push(p), clock: stillClock, intervalMs: 100 });
    let seq = 0;
    const ev = (e: Pick<AgentEvent, "stream" | "data">) =>
      chat.onAgentEvent({ runId: "r1", sessionKey: "agent:main:main", ts: 1_000, seq: ++seq, ...e } as AgentEvent);

    ev({ stream: "message", data: { text: "Starting the build.", toolCallId: "c1" } });
    expect(sent).toEqual([
      expect.objectContaining({ state: "delta", deltaText: "Starting the build.\n\n", runId: "r1" }),
    ]);

    ev({ stream: "assistant", data: { text: "All green.", delta: "All green." } });
    ev({
      stream: "lifecycle",
      data: {
        phase: "end",
        startedAt: 0,
        endedAt: 1,
        status: "ok",
        stopReason: "stop",
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
    });
    const final = sent.at(-1) as Extract<ChatEventPayload, { state: "final" }>;
    expect(final.state).toBe("final");
    expect(final.message?.content).toEqual([{ type: "text", text: "Starting the build.\n\nAll green." }]);
  });
});
