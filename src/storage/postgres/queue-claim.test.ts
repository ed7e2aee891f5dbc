import type pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { createPostgresPool } from "./pool.js";
import { claimQueuedInputs } from "./queue-claim.js";
import { SessionLeases } from "./session-leases.js";

describe("queue claim options", () => {
  it("refuses a limit that is not a positive whole number", async () => {
    const db = { query: async () => ({ rows: [] }) } as unknown as pg.Pool;
    await expect(claimQueuedInputs(db, { nodeId: "a", limit: 0 })).rejects.toThrow("claim limit");
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("claiming queued inputs with FOR UPDATE SKIP LOCKED", () => {
  let ts: TestSchema;
  let poolA: pg.Pool;
  let poolB: pg.Pool;

  /** Queues inputs the way any node's accept does: one runs row each, status queued, in acceptance order. */
  async function enqueue(sessionKey: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const runId = `${sessionKey}#${i}`;
      await poolA.query(
        "INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ($1, $2, 'queued', 1000, '{}')",
        [runId, sessionKey],
      );
      ids.push(runId);
    }
    return ids;
  }
  const finish = (pool: pg.Pool, runId: string) =>
    pool.query("UPDATE runs SET status = 'ok', ended_at = 2000 WHERE run_id = $1", [runId]);

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    poolA = createPostgresPool(ts.options);
    poolB = createPostgresPool(ts.options);
    await migratePostgres(poolA);
  });
  beforeEach(async () => {
    await poolA.query("DELETE FROM runs");
  });
  afterAll(async () => {
    await poolA?.end();
    await poolB?.end();
    await ts?.drop();
  });

  it("two nodes claiming at once never take the same input, and each session runs one input at a time, in order", async () => {
    const sessions = Array.from({ length: 12 }, (_, i) => `s${i}`);
    const queued = new Map<string, string[]>();
    for (const s of sessions) queued.set(s, await enqueue(s, 4));
    const claimedBy = new Map<string, string>();
    const running = new Set<string>(); // sessions with an input running right now, on either node
    const order = new Map<string, string[]>();
    const violations: string[] = [];

    async function node(nodeId: string, pool: pg.Pool): Promise<void> {
      for (let round = 0; round < 200; round++) {
        const got = await claimQueuedInputs(pool, { nodeId, limit: 3 });
        if (got.length === 0 && claimedBy.size === 48) return;
        for (const c of got) {
          if (claimedBy.has(c.runId)) violations.push(`${c.runId} claimed by ${claimedBy.get(c.runId)} and ${nodeId}`);
          claimedBy.set(c.runId, nodeId);
          if (running.has(c.sessionKey)) violations.push(`${c.sessionKey} ran two inputs at once`);
          running.add(c.sessionKey);
          order.set(c.sessionKey, [...(order.get(c.sessionKey) ?? []), c.runId]);
        }
        // "run" them: end each before the session's next input may be claimed
        for (const c of got) {
          await finish(pool, c.runId);
          running.delete(c.sessionKey);
        }
      }
    }
    await Promise.all([node("node-a", poolA), node("node-b", poolB)]);

    expect(violations).toEqual([]);
    expect(claimedBy.size).toBe(48);
    for (const s of sessions) expect(order.get(s)).toEqual(queued.get(s));
    // both nodes did some of the work (neither waited for the other's locks)
    expect(new Set(claimedBy.values()).size).toBe(2);
  });

  it("a session's second input waits while its first is running, whichever node asks", async () => {
    const [first, second] = await enqueue("busy", 2);
    expect((await claimQueuedInputs(poolA, { nodeId: "node-a" })).map((c) => c.runId)).toEqual([first]);
    expect(await claimQueuedInputs(poolB, { nodeId: "node-b" })).toEqual([]);
    await finish(poolA, first);
    const next = await claimQueuedInputs(poolB, { nodeId: "node-b", now: 5000 });
    expect(next.map((c) => c.runId)).toEqual([second]);
    const { rows } = await poolA.query("SELECT status, node_id, started_at FROM runs WHERE run_id = $1", [second]);
    expect(rows[0]).toEqual({ status: "running", node_id: "node-b", started_at: 5000 });
  });

  it("a claim fenced by a lease takes nothing once another node owns the session", async () => {
    const clock = new ManualClock();
    const a = new SessionLeases(poolA, { nodeId: "node-a", leaseMs: 1000, clock });
    const b = new SessionLeases(poolB, { nodeId: "node-b", leaseMs: 1000, clock });
    const [only] = await enqueue("fenced", 1);
    await enqueue("other", 1);
    const stale = await a.acquire("fenced");
    clock.advance(1000);
    const fresh = await b.acquire("fenced");
    if (!stale || !fresh) throw new Error("leases expected");
    expect(
      await claimQueuedInputs(poolA, { nodeId: "node-a", session: { key: "fenced", token: stale.token } }),
    ).toEqual([]);
    const got = await claimQueuedInputs(poolB, { nodeId: "node-b", session: { key: "fenced", token: fresh.token } });
    // only the fenced session's input, not the other session's
    expect(got.map((c) => c.runId)).toEqual([only]);
  });
});
