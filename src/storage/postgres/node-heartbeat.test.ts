import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { listDeadNodes, NodeHeartbeat, NodeJoinError } from "./node-heartbeat.js";
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

  it("a node whose storage.postgres.leaseMs differs from the live nodes' refuses to join, naming both values; a dead node's does not count", async () => {
    await poolA.query("DELETE FROM nodes"); // the earlier cases' nodes
    const live = new NodeHeartbeat(poolA, { nodeId: "lease-live", leaseMs: LEASE, clock });
    await live.start();
    const odd = new NodeHeartbeat(poolB, { nodeId: "lease-odd", leaseMs: 3000, clock });
    const refused = await odd.start().then(
      () => undefined,
      (err: Error) => err,
    );
    expect(refused).toBeInstanceOf(NodeJoinError);
    expect(refused?.message).toContain(
      "storage.postgres.leaseMs is 3000 on this node but 15000 on the live node lease-live",
    );
    expect((await poolB.query("SELECT 1 FROM nodes WHERE id = 'lease-odd'")).rowCount).toBe(0);
    // the other node dies: one lease later nobody live disagrees
    await live.stop();
    clock.advance(LEASE + 1);
    await odd.start();
    await odd.stop({ leave: true });
    await poolA.query("DELETE FROM nodes WHERE id = 'lease-live'");
  });

  it("cluster.nodeId: a fixed id in use by a live node is refused; after a crash and a lease, its leases and runs are given up at start", async () => {
    const first = new NodeHeartbeat(poolA, { nodeId: "fixed-1", leaseMs: LEASE, clock, fixedId: true });
    await first.start();
    const twin = new NodeHeartbeat(poolB, { nodeId: "fixed-1", leaseMs: LEASE, clock, fixedId: true });
    await expect(twin.start()).rejects.toThrow('cluster.nodeId "fixed-1" is in use by a live node');
    // the first process holds a session and runs in it, then dies (kill -9: no leave)
    const leases = new SessionLeases(poolA, { nodeId: "fixed-1", leaseMs: LEASE, clock });
    expect(await leases.acquire("s-fixed")).toBeDefined();
    await poolA.query(
      `INSERT INTO runs (run_id, session_key, status, accepted_at, params, node_id)
       VALUES ('fx-running', 's-fixed', 'running', 1, '{}', 'fixed-1'), ('fx-adopted', 's-fixed', 'queued', 2, '{}', 'fixed-1')`,
    );
    await first.stop();
    clock.advance(LEASE + 1);
    await twin.start(); // the restarted process, same id
    const { rows } = await poolB.query(
      "SELECT run_id, node_id FROM runs WHERE session_key = 's-fixed' ORDER BY run_id",
    );
    expect(rows).toEqual([
      { run_id: "fx-adopted", node_id: null },
      { run_id: "fx-running", node_id: null },
    ]);
    expect((await poolB.query("SELECT 1 FROM session_leases WHERE node_id = 'fixed-1'")).rowCount).toBe(0);
    await twin.stop({ leave: true });
    await poolA.query("DELETE FROM runs WHERE session_key = 's-fixed'");
  });
});
