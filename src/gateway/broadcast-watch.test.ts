/*
 * Which follows of a client make its node follow another node's runs (issue 33): the broadcaster's watches on the bus,
 * counted here on an in-process bus that records them (the Postgres bus's reads are counted in
 * events/pg-bus-watch.test.ts and the two-node e2e test).
 */
import { describe, expect, it } from "vitest";
import { AgentEventBus } from "../infra/events.js";
import { ManualClock } from "../testing/manual-clock.js";
import { Broadcaster, CHAT_SESSIONS_PER_CONNECTION, type EventSink } from "./broadcast.js";

/** An in-process bus that keeps the watches held on it, as a Postgres bus would follow them. */
class WatchedBus extends AgentEventBus {
  override readonly spansNodes: boolean = true;
  readonly runs = new Map<string, number>();
  readonly sessions = new Map<string, number>();
  override watchRun(runId: string): () => void {
    return hold(this.runs, runId);
  }
  override watchSession(sessionKey: string): () => void {
    return hold(this.sessions, sessionKey);
  }
}

function hold(counts: Map<string, number>, key: string): () => void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (counts.get(key) ?? 1) - 1;
    if (n === 0) counts.delete(key);
    else counts.set(key, n);
  };
}

function sink(seesAllRuns: boolean): EventSink {
  return {
    ready: true,
    seesAllRuns,
    canSee: () => true,
    canApprove: () => false,
    canReadSession: () => true,
    sendEventJson() {},
  };
}

function setup() {
  const bus = new WatchedBus();
  const b = new Broadcaster({ clock: new ManualClock(0), chatDeltaIntervalMs: 0 });
  b.attach(bus);
  return { bus, b };
}

const END = {
  phase: "end",
  startedAt: 1,
  endedAt: 2,
  status: "ok",
  stopReason: "stop",
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
} as const;

describe("a connection's follows become watches on the bus, and only they do", () => {
  it("connections that follow nothing hold no watch, whatever their scopes", () => {
    const { bus, b } = setup();
    const operator = sink(true);
    b.add(operator);
    b.add(sink(false));
    b.followSessions(operator, true); // sessions.subscribe: status comes from pointers, no run is followed
    bus.emit("r", "s", "lifecycle", { phase: "start", startedAt: 1 });
    expect([bus.runs.size, bus.sessions.size]).toEqual([0, 0]);
  });

  it("a run a connection sent or replays is watched once for all its watchers, until its end", () => {
    const { bus, b } = setup();
    const writer = sink(false);
    const operator = sink(true);
    b.add(writer);
    b.add(operator);
    b.watchRun("r", writer);
    b.watchRun("r", operator);
    b.watchRun("r", operator);
    expect(bus.runs.get("r")).toBe(1);
    b.remove(writer);
    expect(bus.runs.get("r")).toBe(1);
    bus.emit("r", "s", "lifecycle", END);
    expect(bus.runs.has("r")).toBe(false);
  });

  it("a message merged into another turn (no terminal event of its own) is released at its end", () => {
    const { bus, b } = setup();
    const writer = sink(false);
    b.add(writer);
    b.watchRun("merged", writer);
    bus.endRun("merged");
    expect(bus.runs.has("merged")).toBe(false);
  });

  it("on a one-process bus, the runs an operator sends hold nothing in the broadcaster, running, merged or ended", () => {
    const bus = new AgentEventBus();
    const b = new Broadcaster({ clock: new ManualClock(0), chatDeltaIntervalMs: 0 });
    b.attach(bus);
    const got: string[] = [];
    const operator: EventSink = { ...sink(true), sendEventJson: (_prefix, json) => got.push(json) };
    const writer = sink(false);
    b.add(operator);
    b.add(writer);
    const held = () => {
      const inner = b as unknown as { runWatches: Map<string, unknown>; owners: Map<string, unknown> };
      return inner.runWatches.size + inner.owners.size;
    };
    for (const runId of ["r1", "merged"]) b.watchRun(runId, operator);
    // nothing to follow on another node, and the operator sees every run anyway: no entry while they run
    expect(held()).toBe(0);
    b.watchRun("w1", writer);
    expect(held()).toBe(2);
    bus.emit("r1", "s", "lifecycle", { phase: "start", startedAt: 1 });
    bus.emit("r1", "s", "lifecycle", END);
    bus.endRun("r1");
    bus.endRun("merged");
    // a connection that sees only its own runs still forgets a run that ended without a terminal event
    bus.endRun("w1");
    expect(held()).toBe(0);
    // and the operator got the run's events: start, end and the chat final
    expect(got).toHaveLength(3);
  });

  it("a session whose messages are followed is watched until the last follower goes", () => {
    const { bus, b } = setup();
    const one = sink(true);
    const two = sink(true);
    b.add(one);
    b.add(two);
    b.followMessages(one, "s", true);
    b.followMessages(one, "s", true);
    b.followMessages(two, "s", true);
    expect(bus.sessions.get("s")).toBe(1);
    b.followMessages(one, "s", false);
    expect(bus.sessions.has("s")).toBe(true);
    b.remove(two);
    expect(bus.sessions.has("s")).toBe(false);
  });

  it("chat views watch a connection's last sessions only, and end with the connection", () => {
    const { bus, b } = setup();
    const view = sink(true);
    b.add(view);
    const keys = Array.from({ length: CHAT_SESSIONS_PER_CONNECTION + 2 }, (_, i) => `s${i}`);
    for (const key of keys) b.viewChat(view, key);
    b.viewChat(view, keys[keys.length - 1]); // opened again: still one watch
    expect([...bus.sessions.keys()].sort()).toEqual(keys.slice(2).sort());
    expect([...bus.sessions.values()].every((n) => n === 1)).toBe(true);
    b.remove(view);
    expect(bus.sessions.size).toBe(0);
  });
});
