import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { listDeadNodes, NodeHeartbeat } from "./node-heartbeat.js";
import { createPostgresPool } from "./pool.js";
import { SessionLeases } from "./session-leases.js";

describe("node heartbeat options", () => {
  it("refuses an interval that would let leases lapse between beats", () => {
    const db = { query: async () => ({ rows: [], rowCount: 0 }) } as unknown as pg.Pool;
    expect(() => new NodeHeartbeat(db, { nodeId: "a", leaseMs: 1000, intervalMs: 1000 })).toThrow(
      "must be shorter than the lease",
    );
    expect(new NodeHeartbeat(db, { nodeId: "a" }).intervalMs).toBe(5000);
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("node heartbeats and dead-node detection", () => {
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

  it("a node that stops beating (kill -9) is listed dead one lease later and its sessions can be taken", async () => {
    const hbA = new NodeHeartbeat(poolA, { nodeId: "node-a", leaseMs: LEASE, clock });
    const hbB = new NodeHeartbeat(poolB, { nodeId: "node-b", leaseMs: LEASE, clock });
    await hbA.start();
    await hbB.start();
    const leaseA = await new SessionLeases(poolA, { nodeId: "node-a", leaseMs: LEASE, clock }).acquire("s1");
    const takeover = new SessionLeases(poolB, { nodeId: "node-b", leaseMs: LEASE, clock });

    // both beat every 5 s: nobody is dead, and A's lease is renewed with each beat
    for (let i = 0; i < 6; i++) {
      clock.advance(hbA.intervalMs);
      await Promise.all([hbA.settled(), hbB.settled()]);
    }
    expect(await listDeadNodes(poolB, { leaseMs: LEASE, clock })).toEqual([]);
    expect(await takeover.acquire("s1")).toBeUndefined();
    const { rows } = await poolB.query("SELECT heartbeat_at FROM nodes WHERE id = 'node-a'");
    expect(rows[0].heartbeat_at).toBe(clock.now());

    // A is killed: its timer never fires again (stop without leaving is what a dead process amounts to)
    const lastBeat = clock.now();
    await hbA.stop();
    clock.advance(LEASE);
    await hbB.settled();
    expect(await listDeadNodes(poolB, { leaseMs: LEASE, clock })).toEqual([]); // exactly one lease: not yet
    clock.advance(1);
    await hbB.settled();
    expect(await listDeadNodes(poolB, { leaseMs: LEASE, clock })).toEqual([
      { id: "node-a", startedAt: expect.any(Number), heartbeatAt: lastBeat },
    ]);
    const taken = await takeover.acquire("s1");
    expect(taken?.nodeId).toBe("node-b");
    expect(taken?.token).toBeGreaterThan(leaseA?.token ?? Number.POSITIVE_INFINITY);
    await hbB.stop();
  });

  it("a node leaving cleanly gives its sessions back at once", async () => {
    const hb = new NodeHeartbeat(poolA, { nodeId: "node-c", leaseMs: LEASE, clock });
    await hb.start();
    await new SessionLeases(poolA, { nodeId: "node-c", leaseMs: LEASE, clock }).acquire("s2");
    await hb.stop({ leave: true });
    expect((await new SessionLeases(poolB, { nodeId: "node-b", leaseMs: LEASE, clock }).acquire("s2"))?.nodeId).toBe(
      "node-b",
    );
    const { rowCount } = await poolB.query("SELECT 1 FROM nodes WHERE id = 'node-c'");
    expect(rowCount).toBe(0);
  });

  it("a failed beat (database unreachable) is reported, and the next beat still happens", async () => {
    const errors: string[] = [];
    let down = false;
    // the node's pool, with a switch that makes every query fail as an unreachable server would
    const db = {
      query: (text: string, values?: unknown[]) =>
        down ? Promise.reject(new Error("connection refused")) : poolA.query(text, values),
    } as unknown as pg.Pool;
    const hb = new NodeHeartbeat(db, {
      nodeId: "node-d",
      leaseMs: LEASE,
      clock,
      onError: (e) => errors.push(e.message),
    });
    await hb.start();
    down = true;
    clock.advance(hb.intervalMs);
    await hb.settled();
    clock.advance(hb.intervalMs);
    await hb.settled();
    expect(errors).toEqual(["connection refused", "connection refused"]);
    down = false;
    clock.advance(hb.intervalMs);
    await hb.settled();
    const { rows } = await poolA.query("SELECT heartbeat_at FROM nodes WHERE id = 'node-d'");
    expect(rows[0].heartbeat_at).toBe(clock.now());
    await hb.stop();
  });
});
