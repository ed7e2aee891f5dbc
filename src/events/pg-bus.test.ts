/*
 * What the Postgres bus does about notifications it never got: its LISTEN connection is cut, and while it is down a
 * run ends (its end notice is lost) and another run starts (its first pointers are lost). The reconnect's catch-up
 * reads the store: the waiter hears the end, the client listener gets the new run from its first event. The peer's
 * reconnect waits for a ManualClock, so "during the gap" is decided by the test, not by timing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentEvent } from "../protocol/agent-events.js";
import type { RunRecord } from "../storage/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { type BusNode, openBusNode, settleNodes } from "./pg-bus.test-support.js";

const until = async (done: () => boolean, what: string) => {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!done()) throw new Error(`timed out waiting for ${what}`);
};

function record(runId: string, status: RunRecord["status"]): RunRecord {
  return { runId, sessionKey: "s", status, acceptedAt: 1, params: { message: "m" } };
}

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a node whose LISTEN connection was down catches up from the store", () => {
  let ts: TestSchema;
  let a: BusNode; // runs the runs
  let b: BusNode; // follows them; its reconnect waits for the clock
  let clock: ManualClock;

  beforeEach(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    clock = new ManualClock();
    a = await openBusNode(ts.options);
    b = await openBusNode(ts.options, { clock, reconnect: { baseMs: 1000, maxMs: 1000 } });
  });
  afterEach(async () => {
    await a?.close();
    await b?.close();
    await ts?.drop();
  });

  async function cutListen(): Promise<void> {
    await a.store.pool.query("SELECT pg_terminate_backend($1)", [b.notifier.backendPid]);
    await until(() => !b.notifier.listening, "node B to notice its LISTEN connection is gone");
  }

  async function reconnect(): Promise<void> {
    clock.advance(1000);
    await until(() => b.notifier.listening, "node B's LISTEN connection to come back");
  }

  it("a waiter hears the end of a run whose end notice was sent while it could not listen", async () => {
    await a.store.acceptInput({ key: "s", agentId: "main", now: 1 }, record("gone", "queued"));
    await a.store.updateRuns([{ runId: "gone", patch: { status: "running", startedAt: 2 } }]);
    let ended = 0;
    b.bus.onRunEnd("gone", () => ended++);
    a.bus.emit("gone", "s", "lifecycle", { phase: "start", startedAt: 2 });
    await cutListen();
    await a.store.updateRuns([{ runId: "gone", patch: { status: "ok", endedAt: 3 } }]);
    a.bus.endRun("gone");
    await settleNodes([a]);
    expect(ended).toBe(0); // the notice went out while B was deaf
    await reconnect();
    await until(() => ended > 0, "the end, found in the store");
    expect(ended).toBe(1);
  });

  it("a client listener gets, from its first event, a run that started while its node could not listen", async () => {
    const heard: AgentEvent[] = [];
    b.bus.subscribe((ev) => heard.push(ev));
    b.bus.watchSession("s");
    await cutListen();
    await a.store.acceptInput({ key: "s", agentId: "main", now: 1 }, record("new", "queued"));
    await a.store.updateRuns([{ runId: "new", patch: { status: "running", startedAt: 2 } }]);
    a.bus.emit("new", "s", "lifecycle", { phase: "start", startedAt: 2 });
    a.bus.emit("new", "s", "assistant", { delta: "stored in the gap" });
    await settleNodes([a]);
    expect(heard).toEqual([]);
    await reconnect();
    await until(() => heard.length >= 2, "the run's events, read back");
    a.bus.emit("new", "s", "assistant", { delta: "live again" });
    await settleNodes([a, b]);
    expect(heard.map((e) => `${e.seq}:${e.stream}`)).toEqual(["1:lifecycle", "2:assistant", "3:assistant"]);
  });
});
