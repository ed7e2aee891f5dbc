import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { listDeadNodes, NodeHeartbeat } from "./node-heartbeat.js";
import {
  disownRunsOfLostSessions,
  endLostRuns,
  forgetDeadNodes,
  listSessionsWithLostRuns,
  NODE_LOST_ERROR,
} from "./node-takeover.js";
import { createPostgresPool } from "./pool.js";
import { adoptInputs, readQueuedInputs } from "./queue-adopt.js";
import { fencePredicate, SessionLeases } from "./session-leases.js";

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a node dies mid-run: another node reports the run lost and runs the queue", () => {
  let ts: TestSchema;
  let poolA: pg.Pool;
  let poolB: pg.Pool;
  const clock = new ManualClock();
  const LEASE = 15_000;

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    poolA = createPostgresPool(ts.options);
    poolB = createPostgresPool(ts.options);
    await migratePostgres(poolA);
  });
  afterAll(async () => {
    await poolA?.end();
    await poolB?.end();
    await ts?.drop();
  });

  it("fails the dead node's running run with node_lost, runs the queued inputs in order, and fences the zombie", async () => {
    for (const [i, id] of ["r1", "r2", "r3"].entries()) {
      await poolA.query(
        "INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ($1, 'main', 'queued', $2, '{}')",
        [id, 1000 + i],
      );
    }
    // node A owns the session and runs r1; r2 and r3 wait behind it
    const hbA = new NodeHeartbeat(poolA, { nodeId: "node-a", leaseMs: LEASE, clock });
    const hbB = new NodeHeartbeat(poolB, { nodeId: "node-b", leaseMs: LEASE, clock });
    await hbA.start();
    await hbB.start();
    const leasesA = new SessionLeases(poolA, { nodeId: "node-a", leaseMs: LEASE, clock });
    const leasesB = new SessionLeases(poolB, { nodeId: "node-b", leaseMs: LEASE, clock });
    const leaseA = await leasesA.acquire("main");
    if (!leaseA) throw new Error("node A should own the free session");
    const first = await startNext(poolA, "node-a", { key: "main", token: leaseA.token });
    expect(first).toEqual(["r1"]);

    // kill -9 of node A: no more beats. B keeps beating; after one lease A is dead.
    await hbA.stop();
    // not before A is dead: its run is a live node's, and its lease is still held
    expect(await listSessionsWithLostRuns(poolB, { selfId: "node-b", leaseMs: LEASE, now: clock.now() })).toEqual([]);
    expect(await leasesB.acquire("main")).toBeUndefined();
    for (let t = 0; t <= LEASE; t += hbB.intervalMs) {
      clock.advance(hbB.intervalMs);
      await hbB.settled();
    }
    expect((await listDeadNodes(poolB, { leaseMs: LEASE, clock })).map((n) => n.id)).toEqual(["node-a"]);

    const at = { selfId: "node-b", leaseMs: LEASE, now: clock.now() };
    expect(await listSessionsWithLostRuns(poolB, at)).toEqual(["main"]);
    const lease = await leasesB.acquire("main");
    if (!lease) throw new Error("node B should get the dead node's expired lease");
    expect(await endLostRuns(poolB, lease, at)).toEqual(["r1"]);
    expect(await forgetDeadNodes(poolB, at)).toEqual(["node-a"]);
    const { rows: r1 } = await poolB.query("SELECT status, stop_reason, error FROM runs WHERE run_id = 'r1'");
    expect(r1[0]).toEqual({ status: "error", stop_reason: "node_lost", error: NODE_LOST_ERROR });
    expect(await listDeadNodes(poolB, { leaseMs: LEASE, clock })).toEqual([]); // the dead node's row is gone

    // B runs the queue, in order, one at a time
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      const got = await startNext(poolB, "node-b", { key: "main", token: lease.token });
      if (got.length === 0) break;
      order.push(...got);
      await poolB.query("UPDATE runs SET status = 'ok' WHERE run_id = $1", [got[0]]);
    }
    expect(order).toEqual(["r2", "r3"]);

    // node A wakes up (a long GC pause, not a kill) and tries to finish r1 as it would: its token is stale
    const zombie = await poolA.query(
      `UPDATE runs SET status = 'ok', error = NULL WHERE run_id = 'r1' AND ${fencePredicate(1, 2)}`,
      ["main", leaseA.token],
    );
    expect(zombie.rowCount).toBe(0);
    const stale = { nodeId: "node-a", session: { key: "main", token: leaseA.token } };
    expect(await readQueuedInputs(poolA, stale)).toEqual([]);
    expect(await adoptInputs(poolA, { ...stale, runIds: ["r2"] })).toEqual([]);
    const { rows } = await poolB.query("SELECT run_id, status, node_id FROM runs ORDER BY run_id");
    expect(rows).toEqual([
      { run_id: "r1", status: "error", node_id: "node-a" },
      { run_id: "r2", status: "ok", node_id: "node-b" },
      { run_id: "r3", status: "ok", node_id: "node-b" },
    ]);
    await hbB.stop();
  });

  it("a node gives up only its running runs of sessions whose lease it no longer holds; a run of no node is ended", async () => {
    await poolA.query("DELETE FROM runs; DELETE FROM session_leases; DELETE FROM nodes;");
    const leasesA = new SessionLeases(poolA, { nodeId: "node-a", leaseMs: LEASE, clock });
    const leasesB = new SessionLeases(poolB, { nodeId: "node-b", leaseMs: LEASE, clock });
    await new NodeHeartbeat(poolA, { nodeId: "node-a", leaseMs: LEASE, clock }).beat();
    await new NodeHeartbeat(poolB, { nodeId: "node-b", leaseMs: LEASE, clock }).beat();
    const kept = await leasesA.acquire("kept");
    const gone = await leasesB.acquire("gone");
    if (!kept || !gone) throw new Error("both sessions are free");
    // A runs one run in a session it holds, and one in a session B took from it; "moved" came from a crashed SQLite
    // store: running, on no node
    for (const [id, key, node] of [
      ["k1", "kept", "node-a"],
      ["g1", "gone", "node-a"],
      ["m1", "moved", null],
    ]) {
      await poolA.query(
        "INSERT INTO runs (run_id, session_key, status, accepted_at, params, node_id) VALUES ($1, $2, 'running', 1, '{}', $3)",
        [id, key, node],
      );
    }
    const at = { selfId: "node-b", leaseMs: LEASE, now: clock.now() };
    // A is alive: its runs are its own to finish, until it gives up the one it cannot
    expect(await listSessionsWithLostRuns(poolB, at)).toEqual(["moved"]);
    expect(await disownRunsOfLostSessions(poolA, "node-a")).toEqual(["g1"]);
    expect(await listSessionsWithLostRuns(poolB, at)).toEqual(["gone", "moved"]);
    expect(await endLostRuns(poolB, gone, at)).toEqual(["g1"]);
    const moved = await leasesB.acquire("moved");
    if (!moved) throw new Error("nobody holds the moved session");
    expect(await endLostRuns(poolB, moved, at)).toEqual(["m1"]);
    const { rows } = await poolB.query("SELECT run_id, status, stop_reason FROM runs ORDER BY run_id");
    expect(rows).toEqual([
      { run_id: "g1", status: "error", stop_reason: "node_lost" },
      { run_id: "k1", status: "running", stop_reason: null },
      { run_id: "m1", status: "error", stop_reason: "node_lost" },
    ]);
  });
});

/**
 * What a node does to run a session's next input (cluster/intake.ts, then its queue): adopt the session's queued
 * inputs under its lease, then start the oldest of its own. Empty when its lease is stale or nothing waits.
 */
async function startNext(pool: pg.Pool, nodeId: string, session: { key: string; token: number }): Promise<string[]> {
  const waiting = await readQueuedInputs(pool, { nodeId, session });
  await adoptInputs(pool, { nodeId, session, runIds: waiting.map((r) => r.runId) });
  const { rows } = await pool.query<{ run_id: string }>(
    `UPDATE runs SET status = 'running' WHERE run_id = (
       SELECT run_id FROM runs WHERE session_key = $1 AND status = 'queued' AND node_id = $2
         AND ${fencePredicate(1, 3)} ORDER BY queue_seq LIMIT 1)
     RETURNING run_id`,
    [session.key, nodeId, session.token],
  );
  return rows.map((r) => r.run_id);
}
