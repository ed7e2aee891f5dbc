import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { migratePostgres } from "../storage/postgres/migrate.js";
import { createPostgresPool } from "../storage/postgres/pool.js";
import { ManualClock } from "../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { eventually, openTestNode, type TestNode } from "./cluster.test-support.js";
import { NODE_LOST } from "./takeover.js";

const LEASE = 15_000;
const T0 = 1_700_000_000_000;
const S = "agent:main:s";

/**
 * Every accepted input reaches a terminal state (issue 25, item 2). Each node here has its own clock: a node whose
 * clock does not move is paused (none of its beats run), and one opened with a later clock came up later. The
 * database's times are the nodes' clocks, so "dead" is exactly "its clock stood still for a lease".
 */
describe.skipIf(!testPostgresUrl)(
  "a running run of a node that is gone always ends (cluster layer on Postgres)",
  () => {
    let ts: TestSchema;
    const open: TestNode[] = [];

    beforeAll(async () => {
      ts = await createTestSchema(testPostgresUrl as string);
      const pool = createPostgresPool(ts.options);
      await migratePostgres(pool);
      await pool.end();
    });
    afterEach(async () => {
      for (const n of open.splice(0)) await n.close();
      const pool = createPostgresPool(ts.options);
      await pool.query("DELETE FROM runs; DELETE FROM session_leases; DELETE FROM nodes;");
      await pool.end();
    });
    afterAll(async () => {
      await ts?.drop();
    });

    async function node(nodeId: string, startsAt: number): Promise<TestNode & { clock: ManualClock }> {
      const clock = new ManualClock(startsAt);
      const n = await openTestNode(ts.options, { nodeId, leaseMs: LEASE, clock });
      open.push(n);
      return Object.assign(n, { clock });
    }

    async function statusOf(n: TestNode, runId: string) {
      const { rows } = await n.pool.query("SELECT status, stop_reason FROM runs WHERE run_id = $1", [runId]);
      return rows[0] as { status: string; stop_reason: string | null };
    }

    it("a dead node's run is ended by the node that already holds its session's lease", async () => {
      const c = await node("node-c", T0);
      await c.accept(S, "r1");
      expect(await c.queue.start(S)).toBe("r1");
      await c.node.stopBeating(); // kill -9
      // B comes up after C's lease ran out, and takes the session for a new message before its first beat
      const b = await node("node-b", T0 + LEASE + 1);
      await b.accept(S, "r2");
      expect(b.node.ownership.owns(S)).toBe(true);
      await b.node.tick();
      expect(b.queue.ended).toEqual([{ runId: "r1", stopReason: NODE_LOST }]);
      expect(await statusOf(b, "r1")).toEqual({ status: "error", stop_reason: NODE_LOST });
      expect(b.queue.adoptedIds()).toEqual(["r2"]);
    });

    it("two dead nodes' runs in one session are both ended in one takeover pass", async () => {
      // C runs r1 and dies; A takes the session after C's lease, runs r2 with r3 waiting, and dies too
      const c = await node("node-c", T0);
      await c.accept(S, "r1");
      await c.queue.start(S);
      await c.node.stopBeating();
      const a = await node("node-a", T0 + LEASE + 1);
      await a.accept(S, "r2");
      await a.accept(S, "r3");
      expect(await a.queue.start(S)).toBe("r2");
      await a.node.stopBeating();
      // B sees both dead at once; the lease it takes for the first keeps r3 (its work now) and must not block the second
      const b = await node("node-b", T0 + 2 * (LEASE + 1));
      await b.node.tick();
      expect(b.queue.ended.map((e) => e.runId).sort()).toEqual(["r1", "r2"]);
      expect(await statusOf(b, "r1")).toEqual({ status: "error", stop_reason: NODE_LOST });
      expect(await statusOf(b, "r2")).toEqual({ status: "error", stop_reason: NODE_LOST });
      expect(b.queue.adoptedIds()).toEqual(["r3"]);
      const { rows } = await b.pool.query("SELECT id FROM nodes ORDER BY id");
      expect(rows.map((r) => r.id)).toEqual(["node-b"]); // the dead nodes' rows go once nothing of theirs runs
    });

    it("a node that paused past its lease and came back gives up the run it can no longer finish, and it ends", async () => {
      const c = await node("node-c", T0);
      await c.accept(S, "r1");
      await c.queue.start(S);
      // C pauses (its clock stands still); B, a lease later, takes the session for a new message
      const b = await node("node-b", T0 + LEASE + 1);
      await b.accept(S, "r2");
      // C wakes: its beat registers it alive again and finds its lease gone; its turn is stopped, its writes fenced
      c.clock.advance(LEASE + 1);
      await c.node.tick();
      await eventually(async () => {
        const { rows } = await c.pool.query("SELECT heartbeat_at FROM nodes WHERE id = 'node-c'");
        return Number(rows[0]?.heartbeat_at) === c.clock.now();
      }, "node C beats again");
      expect(c.queue.aborted).toEqual([S]);
      // C is alive, so nobody takes r1 for a dead node's: unless C gives it up, it stays running for ever
      await b.node.tick();
      expect(b.queue.ended).toEqual([{ runId: "r1", stopReason: NODE_LOST }]);
      expect(await statusOf(b, "r1")).toEqual({ status: "error", stop_reason: NODE_LOST });
      const { rows } = await b.pool.query("SELECT run_id FROM runs WHERE status = 'running'");
      expect(rows).toEqual([]);
    });

    it("a live node's running run in a session it holds is never ended by another node", async () => {
      const a = await node("node-a", T0);
      await a.accept(S, "r1");
      await a.queue.start(S);
      const b = await node("node-b", T0);
      await b.node.tick();
      await a.node.tick();
      expect(b.queue.ended).toEqual([]);
      expect(a.queue.ended).toEqual([]);
      expect((await statusOf(a, "r1")).status).toBe("running");
    });
  },
);
