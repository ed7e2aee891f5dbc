import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { listDeadNodes, NodeHeartbeat } from "./node-heartbeat.js";
import { forgetDeadNodes } from "./node-takeover.js";
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

  it("a node taken for dead while only paused registers again on its next beat, and is seen dead when it then dies", async () => {
    const rejoined: number[] = [];
    let paused = false;
    // node E's view of the database: while it is paused (a long GC pause, a stopped process) none of its beats arrive
    const db = {
      query: (text: string, values?: unknown[]) =>
        paused ? Promise.reject(new Error("paused")) : poolA.query(text, values),
    } as unknown as pg.Pool;
    const hbE = new NodeHeartbeat(db, { nodeId: "node-e", leaseMs: LEASE, clock, onRejoined: () => rejoined.push(1) });
    const hbF = new NodeHeartbeat(poolB, { nodeId: "node-f", leaseMs: LEASE, clock });
    await hbE.start();
    await hbF.start();
    paused = true;
    for (let t = 0; t <= LEASE; t += hbF.intervalMs) {
      clock.advance(hbF.intervalMs);
      await Promise.all([hbE.settled(), hbF.settled()]);
    }
    expect((await listDeadNodes(poolB, { leaseMs: LEASE, clock })).map((n) => n.id)).toContain("node-e");
    // nothing of E's is running: the takeover pass forgets it
    expect(await forgetDeadNodes(poolB, { leaseMs: LEASE, now: clock.now() })).toContain("node-e");
    expect((await poolB.query("SELECT 1 FROM nodes WHERE id = 'node-e'")).rowCount).toBe(0);

    // E wakes up: its next beat puts its row back (and says so), so it counts as alive again
    paused = false;
    clock.advance(hbE.intervalMs);
    await Promise.all([hbE.settled(), hbF.settled()]);
    expect(rejoined).toEqual([1]);
    const { rows } = await poolB.query("SELECT heartbeat_at FROM nodes WHERE id = 'node-e'");
    expect(rows[0]?.heartbeat_at).toBe(clock.now());
    expect((await listDeadNodes(poolB, { leaseMs: LEASE, clock })).map((n) => n.id)).not.toContain("node-e");
    clock.advance(hbE.intervalMs);
    await Promise.all([hbE.settled(), hbF.settled()]);
    expect(rejoined).toEqual([1]); // an ordinary beat is not a rejoin

    // ...and when it is then killed, the others see it dead one lease later, as any other node
    await hbE.stop();
    for (let t = 0; t <= LEASE; t += hbF.intervalMs) {
      clock.advance(hbF.intervalMs);
      await hbF.settled();
    }
    expect((await listDeadNodes(poolB, { leaseMs: LEASE, clock })).map((n) => n.id)).toContain("node-e");
    await hbF.stop({ leave: true });
    await poolB.query("DELETE FROM nodes WHERE id = 'node-e'");
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
