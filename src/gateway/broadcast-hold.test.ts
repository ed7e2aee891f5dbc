import { describe, expect, it } from "vitest";
import { AgentEventBus } from "../infra/events.js";
import { ManualClock } from "../testing/manual-clock.js";
import { Broadcaster, type EventSink } from "./broadcast.js";

/** A client that sees every run and records the agent events it is sent, as `runId:seq`. */
function watcher(): EventSink & { got: string[] } {
  const got: string[] = [];
  return {
    got,
    ready: true,
    seesAllRuns: true,
    canSee: () => true,
    canApprove: () => false,
    canReadSession: () => true,
    sendEventJson(prefix, json) {
      if (!prefix.includes('"agent"')) return;
      const ev = JSON.parse(json) as { runId: string; seq: number };
      got.push(`${ev.runId}:${ev.seq}`);
    },
  };
}

describe("holding a run's live events (accept and agent.events read the store meanwhile)", () => {
  it("holds back only that run's events, in order, until the last holder releases it; other runs keep flowing", () => {
    const bus = new AgentEventBus();
    const b = new Broadcaster({ clock: new ManualClock(0), chatDeltaIntervalMs: 0 });
    b.attach(bus);
    const sink = watcher();
    b.add(sink);
    const delta = (runId: string) => bus.emit(runId, "agent:main:main", "assistant", { delta: "x" });

    b.hold("slow");
    b.hold("slow"); // a second request for the same run, e.g. two agent.events replays at once
    delta("slow");
    delta("other");
    delta("slow");
    expect(sink.got).toEqual(["other:1"]);
    b.release("slow");
    delta("other");
    expect(sink.got).toEqual(["other:1", "other:2"]);
    b.release("slow");
    delta("slow");
    expect(sink.got).toEqual(["other:1", "other:2", "slow:1", "slow:2", "slow:3"]);
  });
});
