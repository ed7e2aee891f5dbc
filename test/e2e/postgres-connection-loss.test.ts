/*
 * Postgres connection loss under two gateway nodes (issue 14, must-have 5): while runs stream on node A and a client
 * of node B follows them, every backend connection of both nodes is terminated (pg_terminate_backend: the pools'
 * and the LISTEN connections). The nodes keep serving; the LISTEN connections come back and B re-reads what was
 * stored while it was deaf; every event reaches B once, in order; every accepted run ends (or still runs); later
 * turns work. Real gateways, WebSockets and Postgres; waits are bounded, nothing asserts a duration.
 *
 * Only this file's nodes are terminated: their connections carry an application_name of their own (in the URL), so
 * test files running beside this one on the same server keep theirs.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelRequest, ModelStreamEvent } from "../../src/providers/types.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import {
  carriesChunk,
  connectedPeer,
  type Deferred,
  deferred,
  isLifecycleEnd,
  type RawPeer,
  removeTempDirs,
  runEvents,
  startTestGateway,
  type TestGateway,
  TestProvider,
} from "../fixtures/gateway/harness.js";

type Ev = { runId: string; seq: number; stream: string; data: Record<string, unknown> };

/** The test model, with a pause before each delta when `paceMs` is set: a run then streams (and writes) for a while. */
class PacedProvider extends TestProvider {
  paceMs = 0;
  override async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    for await (const ev of super.stream(request)) {
      if (this.paceMs > 0 && ev.type === "text_delta") await new Promise((r) => setTimeout(r, this.paceMs));
      yield ev;
    }
  }
}
const paced = new PacedProvider();

/**
 * Each run `run-<m>` ended cleanly (completed, or failed with an error that says why; never left pending or
 * running), both nodes saw its end, and the watcher on node B got exactly the events the sender on node A got, with
 * gap-free seqs.
 */
async function expectEndedAlikeOnBothNodes(
  runs: string[],
  { watcher, sender, waitMs }: { watcher: RawPeer; sender: RawPeer; waitMs: number },
): Promise<void> {
  for (const m of runs) {
    const waited = await watcher.call("agent.wait", { runId: `run-${m}`, timeoutMs: waitMs });
    expect(waited.ok, JSON.stringify(waited.error)).toBe(true);
    const status = waited.payload?.status;
    expect(["ok", "error"]).toContain(status);
    if (status === "error") expect(String(waited.payload?.error ?? "")).not.toBe("");
    await watcher.seen(isLifecycleEnd(`run-${m}`), `${m}'s end on node B`);
    await sender.seen(isLifecycleEnd(`run-${m}`), `${m}'s end on node A`);
    const onB = runEvents(watcher, `run-${m}`) as unknown as Ev[];
    const onA = runEvents(sender, `run-${m}`) as unknown as Ev[];
    expect(onB.map((e) => e.seq)).toEqual(Array.from({ length: onB.length }, (_, i) => i + 1));
    expect(onB).toEqual(onA);
  }
}

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("Postgres connections lost under two gateway nodes", () => {
  let ts: TestSchema;
  let appName: string;
  let admin: pg.Client;
  let nodeA: TestGateway;
  let nodeB: TestGateway;
  const peers: RawPeer[] = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    appName = `loopgate-connloss-${ts.schema}`;
    const url = new URL(ts.options.url);
    url.searchParams.set("application_name", appName);
    const storage = { backend: "postgres", postgres: { url: url.toString(), schema: ts.schema } };
    nodeA = await startTestGateway({ config: { storage }, provider: paced });
    nodeB = await startTestGateway({ config: { storage } });
    admin = new pg.Client({ connectionString: ts.options.url, application_name: "loopgate-test-admin" });
    await admin.connect();
  });
  afterAll(async () => {
    for (const p of peers) p.close();
    await nodeA?.gw.close();
    await nodeB?.gw.close();
    await admin?.end();
    await ts?.drop();
    removeTempDirs();
  });

  /** Terminates every connection of the two nodes; resolves with how many there were. */
  async function terminateNodeConnections(): Promise<number> {
    const { rows } = await admin.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
      [appName],
    );
    for (const r of rows) await admin.query("SELECT pg_terminate_backend($1)", [r.pid]);
    return rows.length;
  }

  /**
   * B's client opens the sessions it watches, as a chat view does (chat.history): a node follows another node's runs
   * only for a client of its own that follows them (issue 33).
   */
  async function followSessions(watcher: RawPeer, names: string[]): Promise<void> {
    for (const m of names) {
      const opened = await watcher.call("chat.history", { sessionKey: `s-${m}` });
      expect(opened.ok, JSON.stringify(opened.error)).toBe(true);
    }
  }

  it("connections cut again and again while runs stream and write: every run ends (completed, or failed with its error), and B gets every stored event in order", {
    timeout: 90_000,
  }, async () => {
    // no gates: deltas keep coming (a few ms apart), so event batches, transcript and record writes are in flight
    nodeA.provider.script = (req) => {
      const last = [...req.messages].reverse().find((m) => m.role === "user");
      return { before: Array.from({ length: 150 }, (_, i) => `${String(last?.content)}-${i} `) };
    };
    paced.paceMs = 3;
    const watcher = await connectedPeer(nodeB.url, { scopes: ["operator.read"] });
    const sender = await connectedPeer(nodeA.url);
    peers.push(watcher, sender);
    const runs = ["w1", "w2", "w3", "w4"];
    await followSessions(watcher, runs);
    for (const m of runs) {
      const r = await sender.call("chat.send", { sessionKey: `s-${m}`, message: m, idempotencyKey: `run-${m}` });
      expect(r.ok, JSON.stringify(r.error)).toBe(true);
    }
    for (let cut = 0; cut < 3; cut++) {
      await watcher.seen((f) => carriesChunk(f, `w1-${40 * (cut + 1)} `), `w1's delta ${40 * (cut + 1)} on node B`);
      await terminateNodeConnections();
    }
    await expectEndedAlikeOnBothNodes(runs, { watcher, sender, waitMs: 60_000 });
    const { rows } = await admin.query<{ status: string }>(
      `SELECT status FROM ${ts.schema}.runs WHERE run_id = ANY($1::text[])`,
      [runs.map((m) => `run-${m}`)],
    );
    expect(rows).toHaveLength(runs.length);
    for (const r of rows) expect(["ok", "error"]).toContain(r.status);
    paced.paceMs = 0;
  });

  it("both nodes lose every connection mid-run: B still gets every event of A's runs in order, every run ends, later turns work", {
    timeout: 60_000,
  }, async () => {
    const gates = new Map<string, Deferred>();
    nodeA.provider.script = (req) => {
      const last = [...req.messages].reverse().find((m) => m.role === "user");
      const text = String(last?.content ?? "");
      const gate = gates.get(text);
      return gate
        ? { before: [`${text}-a `, `${text}-b `], gate: gate.promise, after: [`${text}-c `, `${text}-d`] }
        : { before: [`${text}-quick`] };
    };
    const watcher = await connectedPeer(nodeB.url, { scopes: ["operator.read"] });
    const sender = await connectedPeer(nodeA.url);
    peers.push(watcher, sender);

    const runs = ["m1", "m2", "m3"];
    await followSessions(watcher, [...runs, "after"]);
    for (const m of runs) gates.set(m, deferred());
    for (const m of runs) {
      const r = await sender.call("chat.send", { sessionKey: `s-${m}`, message: m, idempotencyKey: `run-${m}` });
      expect(r.ok, JSON.stringify(r.error)).toBe(true);
    }
    for (const m of runs) {
      await watcher.seen(
        (f) => f.payload?.runId === `run-${m}` && carriesChunk(f, `${m}-b `),
        `${m}'s first deltas on node B`,
      );
    }

    expect(await terminateNodeConnections()).toBeGreaterThanOrEqual(2); // at least both LISTEN connections
    // one run goes on at once, while the LISTEN connections may still be down: its events are stored in the gap
    gates.get("m1")?.resolve();
    await sender.seen(isLifecycleEnd("run-m1"), "m1's end on node A");
    expect((await sender.call("agent.wait", { runId: "run-m1", timeoutMs: 30_000 })).payload).toMatchObject({
      status: "ok",
    });
    // a second cut while the others are still running (their statements were never sent: they complete), then they finish
    await terminateNodeConnections();
    gates.get("m2")?.resolve();
    gates.get("m3")?.resolve();

    await expectEndedAlikeOnBothNodes(runs, { watcher, sender, waitMs: 30_000 });

    // every accepted input reached a terminal status in the store
    const { rows } = await admin.query<{ run_id: string; status: string }>(
      `SELECT run_id, status FROM ${ts.schema}.runs ORDER BY run_id`,
    );
    expect(rows.filter((r) => runs.some((m) => r.run_id === `run-${m}`)).map((r) => r.status)).toEqual([
      "ok",
      "ok",
      "ok",
    ]);

    // the nodes keep serving: a new turn on A is heard on B
    const after = await sender.call("chat.send", {
      sessionKey: "s-after",
      message: "later",
      idempotencyKey: "run-after",
    });
    expect(after.ok, JSON.stringify(after.error)).toBe(true);
    const done = await watcher.call("agent.wait", { runId: "run-after", timeoutMs: 30_000 });
    expect(done.payload).toMatchObject({ status: "ok" });
    await watcher.seen(isLifecycleEnd("run-after"), "the later run's end on node B");
    // and B's events stay complete for it too
    const later = runEvents(watcher, "run-after") as unknown as Ev[];
    expect(later.map((e) => e.seq)).toEqual(Array.from({ length: later.length }, (_, i) => i + 1));
  });
});
