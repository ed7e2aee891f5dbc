import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { createPostgresPool } from "./pool.js";
import { checkFence, SessionLeases } from "./session-leases.js";

const LEASE = 1000;

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a node paused in the middle of a fenced write (issue 25, item 2)", () => {
  let ts: TestSchema;
  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    const pool = createPostgresPool(ts.options);
    await migratePostgres(pool);
    await pool.end();
  });
  afterAll(async () => {
    await ts?.drop();
  });

  it("paused-node-mid-transaction-does-not-block-takeover: its lock on the lease row goes with its lease", async () => {
    const clock = new ManualClock();
    const poolA = createPostgresPool({ ...ts.options, leaseMs: LEASE, onConnectionError: () => {} });
    const poolB = createPostgresPool({ ...ts.options, leaseMs: LEASE });
    try {
      const leaseA = await new SessionLeases(poolA, { nodeId: "node-a", leaseMs: LEASE, clock }).acquire("s");
      if (!leaseA) throw new Error("the session is free");
      // node A opens a fenced write (it locks its lease row FOR SHARE) and then stops: SIGSTOP, a long GC pause
      const stalled = await poolA.connect();
      stalled.on("error", () => {});
      await stalled.query("BEGIN");
      await checkFence(stalled, "s", leaseA.token);
      clock.advance(LEASE + 1);
      // node B takes the session once the lease ran out; before the fix its upsert waited for A's lock for
      // 2 × statementTimeoutMs (60 s), far past the lease (and this test's own timeout)
      const started = Date.now();
      const leaseB = await new SessionLeases(poolB, { nodeId: "node-b", leaseMs: LEASE, clock }).acquire("s");
      console.info(`paused transaction: node B took the session ${Date.now() - started} ms after asking`);
      expect(leaseB).toMatchObject({ nodeId: "node-b" });
      // node A wakes: its transaction is gone, and with it anything it would have written
      await expect(stalled.query("SELECT 1")).rejects.toThrow();
      stalled.release(true);
    } finally {
      await poolA.end();
      await poolB.end();
    }
  });
});
