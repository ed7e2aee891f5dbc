import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { createPostgresPool, inTransaction } from "./pool.js";
import { checkFence, FencedError, fencePredicate, SessionLeases } from "./session-leases.js";

describe("session lease options", () => {
  it("refuses a lease that is not a positive whole number of milliseconds, naming the key", () => {
    const db = { query: async () => ({ rows: [], rowCount: 0 }) } as unknown as pg.Pool;
    expect(() => new SessionLeases(db, { nodeId: "a", leaseMs: 0 })).toThrow("storage.postgres.leaseMs");
    expect(() => new SessionLeases(db, { nodeId: "a", leaseMs: 1.5 })).toThrow("storage.postgres.leaseMs");
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("session ownership across two nodes (lease rows with fencing tokens)", () => {
  let ts: TestSchema;
  // two "nodes": each its own pool, as two processes would have
  let poolA: pg.Pool;
  let poolB: pg.Pool;
  const clock = new ManualClock();
  const LEASE = 15_000;
  let a: SessionLeases;
  let b: SessionLeases;

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    poolA = createPostgresPool(ts.options);
    poolB = createPostgresPool(ts.options);
    await migratePostgres(poolA);
    a = new SessionLeases(poolA, { nodeId: "node-a", leaseMs: LEASE, clock });
    b = new SessionLeases(poolB, { nodeId: "node-b", leaseMs: LEASE, clock });
  });
  afterAll(async () => {
    await poolA?.end();
    await poolB?.end();
    await ts?.drop();
  });

  it("two nodes racing for the same free sessions: each session gets exactly one owner", async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `race:${i}`);
    const results = await Promise.all(
      keys.flatMap((k) => [a.acquire(k).then((l) => ({ k, l })), b.acquire(k).then((l) => ({ k, l }))]),
    );
    for (const k of keys) {
      const winners = results.filter((r) => r.k === k && r.l);
      expect(winners).toHaveLength(1);
      expect((await a.holder(k))?.nodeId).toBe(winners[0].l?.nodeId);
    }
  });

  it("a held session is refused to the other node, and to the same node again, until released", async () => {
    const lease = await a.acquire("busy");
    expect(lease?.nodeId).toBe("node-a");
    expect(await b.acquire("busy")).toBeUndefined();
    expect(await a.acquire("busy")).toBeUndefined();
    expect(await a.release(lease as NonNullable<typeof lease>)).toBe(true);
    expect((await b.acquire("busy"))?.nodeId).toBe("node-b");
  });

  it("a node that stops renewing loses its sessions one lease after its last renewal, not before", async () => {
    const held = await a.acquire("kept");
    const lost = await a.acquire("lost");
    expect(held && lost).toBeTruthy();
    clock.advance(LEASE - 1);
    expect(await b.acquire("lost")).toBeUndefined(); // not yet expired
    // A renews everything it holds (both sessions); from here on it renews nothing, so both lapse one lease later
    expect(await a.renewAll()).toBeGreaterThanOrEqual(2);
    clock.advance(LEASE - 1);
    expect(await b.acquire("kept")).toBeUndefined(); // renewed, so still A's
    expect(await b.acquire("lost")).toBeUndefined();
    clock.advance(1);
    const takeover = await b.acquire("lost");
    expect(takeover?.nodeId).toBe("node-b");
    expect(takeover?.token).toBeGreaterThan(lost?.token ?? Number.POSITIVE_INFINITY);
  });

  it("a zombie node that wakes up after a takeover cannot write to the session", async () => {
    const old = await a.acquire("zombie");
    if (!old) throw new Error("node A should get a free session");
    clock.advance(LEASE);
    const fresh = await b.acquire("zombie");
    if (!fresh) throw new Error("node B should take an expired lease");
    await poolA.query("CREATE TABLE IF NOT EXISTS fenced_writes (session_key TEXT, writer TEXT)");

    // a multi-statement write: the fence check throws, nothing is written
    await expect(
      inTransaction(poolA, async (c) => {
        await checkFence(c, "zombie", old.token);
        await c.query("INSERT INTO fenced_writes VALUES ('zombie', 'node-a')");
      }),
    ).rejects.toBeInstanceOf(FencedError);
    // a one-statement write with the predicate: zero rows
    const stale = await poolA.query(`INSERT INTO fenced_writes SELECT $1, 'node-a' WHERE ${fencePredicate(1, 2)}`, [
      "zombie",
      old.token,
    ]);
    expect(stale.rowCount).toBe(0);
    // the zombie's heartbeat does not win the session back, and its release does not free B's lease
    await a.renewAll();
    expect(await a.release(old)).toBe(false);
    expect((await b.holder("zombie"))?.token).toBe(fresh.token);
    // the owner writes fine
    await inTransaction(poolB, async (c) => {
      await checkFence(c, "zombie", fresh.token);
      await c.query("INSERT INTO fenced_writes VALUES ('zombie', 'node-b')");
    });
    const { rows } = await poolB.query("SELECT writer FROM fenced_writes WHERE session_key = 'zombie'");
    expect(rows).toEqual([{ writer: "node-b" }]);
  });

  it("a takeover committing while the old owner writes waits for that write, which then counts", async () => {
    const old = await a.acquire("overlap");
    if (!old) throw new Error("node A should get a free session");
    clock.advance(LEASE);
    await poolA.query("CREATE TABLE IF NOT EXISTS fenced_writes (session_key TEXT, writer TEXT)");
    // A's transaction holds the lease row FOR SHARE; B's takeover must wait until A commits
    const writer = await poolA.connect();
    try {
      await writer.query("BEGIN");
      await checkFence(writer, "overlap", old.token);
      let tookOver = false;
      const takeover = b.acquire("overlap").then((l) => {
        tookOver = true;
        return l;
      });
      await writer.query("INSERT INTO fenced_writes VALUES ('overlap', 'node-a')");
      // wait (bounded) until the server shows B's takeover blocked on the lease row's lock
      let waiting = 0;
      for (let i = 0; i < 500 && waiting === 0; i++) {
        const { rows } = await poolB.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO session_leases%' AND application_name = $1`,
          [ts.options.applicationName],
        );
        waiting = rows[0].n;
      }
      expect(waiting).toBe(1);
      expect(tookOver).toBe(false);
      await writer.query("COMMIT");
      expect((await takeover)?.nodeId).toBe("node-b");
    } finally {
      writer.release();
    }
    const { rows } = await poolB.query("SELECT writer FROM fenced_writes WHERE session_key = 'overlap'");
    expect(rows).toEqual([{ writer: "node-a" }]);
  });
});
