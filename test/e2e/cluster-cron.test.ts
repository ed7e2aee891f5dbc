/*
 * Issue 33 #4: cron jobs on several nodes. Only the cron leader (the holder of the `cron` role's lease) runs jobs; a
 * `cron.add` sent to another node is stored there and announced, so the leader schedules it at once, and a
 * `cron.remove` there stops it on the leader. Two real gateways on one Postgres schema, in this process, named with
 * `cluster.nodeId`; waits are bounded polls, nothing asserts how long anything took.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import {
  connectedPeer,
  type RawPeer,
  removeTempDirs,
  startTestGateway,
  type TestGateway,
} from "../fixtures/gateway/harness.js";

const until = async <T>(probe: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> => {
  let last: T | undefined;
  for (let i = 0; i < 400; i++) {
    last = await probe();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
};

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("cron jobs across two nodes", () => {
  let ts: TestSchema;
  let pool: pg.Pool;
  const nodes: Record<string, TestGateway> = {};
  const peers: RawPeer[] = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    pool = new pg.Pool({ connectionString: ts.options.url, options: `-c search_path=${ts.schema}` });
    for (const id of ["cron-a", "cron-b"]) {
      nodes[id] = await startTestGateway({
        config: {
          storage: { backend: "postgres", postgres: { url: ts.options.url, schema: ts.schema, leaseMs: 1500 } },
          cluster: { nodeId: id, workspace: "affinity" },
        },
      });
    }
  });
  afterAll(async () => {
    for (const p of peers) p.close();
    for (const n of Object.values(nodes)) await n.gw.close();
    await pool?.end();
    await ts?.drop();
    removeTempDirs();
  });

  it("a job added on the node that does not lead cron runs on the leader at once; removed there, the leader drops it", async () => {
    const leaderId = await until(
      async () =>
        (
          await pool.query<{ node_id: string }>(
            "SELECT node_id FROM session_leases WHERE session_key = 'loopgate:leader:cron'",
          )
        ).rows[0]?.node_id,
      (id) => id !== undefined,
      "a cron leader",
    );
    const otherId = leaderId === "cron-a" ? "cron-b" : "cron-a";
    const onOther = await connectedPeer(nodes[otherId].url);
    const onLeader = await connectedPeer(nodes[leaderId].url);
    peers.push(onOther, onLeader);

    const added = await onOther.call("cron.add", { id: "every-second", schedule: "* * * * * *", message: "tick" });
    expect(added.ok, JSON.stringify(added.error)).toBe(true);
    // it fires, and on the leader (the run's node)
    const ran = await until(
      async () =>
        (
          await pool.query<{ node_id: string | null; status: string }>(
            "SELECT node_id, status FROM runs WHERE session_key LIKE '%cron:every-second%' ORDER BY accepted_at LIMIT 1",
          )
        ).rows[0],
      (r) => r !== undefined,
      "the job's first run",
    );
    expect(ran.node_id === null || ran.node_id === leaderId, JSON.stringify(ran)).toBe(true);
    const listed = await onLeader.call("cron.list", {});
    expect(JSON.stringify(listed.payload)).toContain("every-second");

    expect((await onOther.call("cron.remove", { id: "every-second" })).ok).toBe(true);
    await until(
      async () => JSON.stringify((await onLeader.call("cron.list", {})).payload),
      (json) => !json.includes("every-second"),
      "the leader to drop the removed job",
    );
  }, 60_000);
});
