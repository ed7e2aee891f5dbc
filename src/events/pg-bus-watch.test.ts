/*
 * Issue 33: a node reads another node's run events only while one of its own clients follows that run or session.
 * Three nodes on one schema: A runs two runs (one per session, several stored batches each); B's client watches one
 * session; C has what every gateway has (the broadcaster's `subscribe` listener) and no client following anything.
 * The follower's own counters say how many `run_events` queries each node made and how many events they returned.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentEvent } from "../protocol/agent-events.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { type BusNode, openBusNode, settleNodes } from "./pg-bus.test-support.js";

const END = {
  phase: "end",
  startedAt: 1,
  endedAt: 2,
  status: "ok",
  stopReason: "stop",
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
} as const;

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("following only what is watched (three nodes, real Postgres)", () => {
  let ts: TestSchema;
  let a: BusNode;
  let b: BusNode;
  let c: BusNode;

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    [a, b, c] = await Promise.all([openBusNode(ts.options), openBusNode(ts.options), openBusNode(ts.options)]);
  });
  afterAll(async () => {
    for (const n of [a, b, c]) await n?.close();
    await ts?.drop();
  });

  /** Emits a whole run on node A in `batches` stored batches; returns what A's own listeners saw of it. */
  async function runOnA(runId: string, sessionKey: string, batches: number): Promise<AgentEvent[]> {
    const sent: AgentEvent[] = [a.bus.emit(runId, sessionKey, "lifecycle", { phase: "start", startedAt: 1 })];
    for (let i = 0; i < batches; i++) {
      for (let j = 0; j < 5; j++) sent.push(a.bus.emit(runId, sessionKey, "assistant", { delta: `${i}.${j} ` }));
      await settleNodes([a, b, c]);
    }
    sent.push(a.bus.emit(runId, sessionKey, "lifecycle", END));
    a.bus.endRun(runId);
    await settleNodes([a, b, c]);
    return sent;
  }

  it("a node whose clients follow nothing reads no event of another node's run; a node whose client watches the session gets every event in order", async () => {
    const onB: AgentEvent[] = [];
    const onC: AgentEvent[] = [];
    // what C's LISTEN connection receives at all (the test's own settle markers aside)
    const receivedByC: string[] = [];
    const offC = c.notifier.subscribe((p) => p.k !== "sync" && receivedByC.push(`${p.k} ${p.runId}`));
    b.bus.subscribe((ev) => onB.push(ev));
    c.bus.subscribe((ev) => onC.push(ev)); // the gateway's broadcaster: always there, follows nothing by itself
    const releaseB = b.bus.watchSession("watched");

    const watched = await runOnA("run-watched", "watched", 4);
    const other = await runOnA("run-other", "other", 4);

    const cStats = c.bus.followStats();
    const bStats = b.bus.followStats();
    console.log(
      `events of A's runs read by C (no client following): ${cStats.events} in ${cStats.reads} queries; ` +
        `by B (its client watches one session): ${bStats.events} of ${watched.length + other.length} in ${bStats.reads} queries`,
    );
    expect(cStats).toEqual({ reads: 0, events: 0, following: 0 });
    expect(onC).toEqual([]);
    // not one pointer per stored batch: the run's start and end notices only (the batches go to the session's channel)
    offC();
    expect(receivedByC).toEqual(["rs run-watched", "end run-watched", "rs run-other", "end run-other"]);
    expect(c.bus.listenedSessions()).toBe(0);

    expect(onB.map((e) => JSON.stringify(e))).toEqual(watched.map((e) => JSON.stringify(e)));
    expect(bStats.events).toBe(watched.length);
    expect(bStats.following).toBe(0); // the run ended: nothing is read for it any more

    // the watch released, a new run of that session is not read either, and B stops listening to its channel
    expect(b.bus.listenedSessions()).toBe(1);
    releaseB();
    await runOnA("run-later", "watched", 2);
    expect(b.bus.followStats().reads).toBe(bStats.reads);
    expect(onB.some((e) => e.runId === "run-later")).toBe(false);
    expect(b.bus.listenedSessions()).toBe(0);
  });

  it("a node that follows nothing still hears, from the pointers alone, that another node's run started and ended in a session (sessions.changed status), also for an adopted run", async () => {
    const statuses: string[] = [];
    const off = c.bus.onRemoteRunStatus((key) => statuses.push(key));
    const before = c.bus.followStats().reads;
    // an adopted input: its numbering continues after the receipt the accepting node stored (resumeSeq)
    a.bus.resumeSeq("adopted", 1);
    a.bus.emit("adopted", "status-session", "lifecycle", { phase: "start", startedAt: 1 });
    await settleNodes([a, b, c]);
    expect(statuses).toEqual(["status-session"]);
    a.bus.emit("adopted", "status-session", "lifecycle", END);
    a.bus.endRun("adopted");
    await settleNodes([a, b, c]);
    off();
    expect(statuses).toEqual(["status-session", "status-session"]);
    expect(c.bus.followStats().reads).toBe(before);
  });

  it("a run watched by id (a client waiting for the stream of a message it sent here) is read from seq 1 even when the watch came mid-run", async () => {
    const heard: AgentEvent[] = [];
    c.bus.subscribe((ev) => ev.runId === "routed" && heard.push(ev));
    const sent: AgentEvent[] = [a.bus.emit("routed", "s", "lifecycle", { phase: "start", startedAt: 1 })];
    sent.push(a.bus.emit("routed", "s", "assistant", { delta: "early" }));
    await settleNodes([a, b, c]);
    expect(heard).toEqual([]);
    const release = c.bus.watchRun("routed");
    sent.push(a.bus.emit("routed", "s", "assistant", { delta: "late" }));
    sent.push(a.bus.emit("routed", "s", "lifecycle", END));
    a.bus.endRun("routed");
    await settleNodes([a, b, c]);
    release();
    expect(heard.map((e) => e.seq)).toEqual(sent.map((e) => e.seq));
    expect(heard.map((e) => JSON.stringify(e))).toEqual(sent.map((e) => JSON.stringify(e)));
  });
});
