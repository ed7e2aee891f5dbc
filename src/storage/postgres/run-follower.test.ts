import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import { notifyChannel, PgNotifier } from "./notifier.js";
import { createPostgresPool, inTransaction } from "./pool.js";
import { type FollowedEvent, notifyRunEvents, RunEventFollower } from "./run-follower.js";

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a client on node A follows a run executing on node B", () => {
  let ts: TestSchema;
  let nodeB: pg.Pool; // runs the run and stores its events
  let nodeA: pg.Pool; // serves the following client
  let admin: pg.Pool;
  let notifier: PgNotifier;
  let follower: RunEventFollower;
  let channel: string;

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    nodeB = createPostgresPool(ts.options);
    nodeA = createPostgresPool(ts.options);
    admin = createPostgresPool(ts.options);
    await migratePostgres(nodeB);
    channel = notifyChannel(ts.schema);
    notifier = new PgNotifier({ connection: ts.options, channel, reconnect: { baseMs: 20, maxMs: 200 } });
    await notifier.start();
    follower = new RunEventFollower(nodeA, notifier, { pageSize: 7 });
  });
  afterAll(async () => {
    follower?.close();
    await notifier?.stop();
    await Promise.all([nodeB?.end(), nodeA?.end(), admin?.end()]);
    await ts?.drop();
  });

  /** Node B's event writer: a batch of rows and its pointers in one transaction. */
  async function storeBatch(runId: string, seqs: number[]): Promise<void> {
    await inTransaction(nodeB, async (c) => {
      for (const seq of seqs) {
        await c.query(
          "INSERT INTO run_events (run_id, seq, ts, session_key, stream, event) VALUES ($1, $2, 0, 'main', 'assistant', $3)",
          [runId, seq, JSON.stringify({ runId, seq, data: { delta: `t${seq}` } })],
        );
      }
      await notifyRunEvents(
        c,
        channel,
        seqs.map((seq) => ({ runId, seq })),
      );
    });
  }

  /** Resolves once `got` holds `n` events (bounded). */
  async function until(got: FollowedEvent[], n: number): Promise<void> {
    for (let i = 0; i < 400 && got.length < n; i++) await new Promise((r) => setTimeout(r, 10));
  }

  it("gets every event once, in seq order: those stored before it followed, live batches, and those sent while its LISTEN connection was down", async () => {
    const got: FollowedEvent[] = [];
    await storeBatch("run-b", [1, 2, 3]); // before the follow: no pointer will come for these
    const unfollow = follower.follow("run-b", 0, (e) => got.push(e));
    await storeBatch("run-b", [4, 5, 6, 7, 8, 9, 10, 11, 12]); // more than a page
    await storeBatch("run-b", [13]);
    await until(got, 13);

    // the LISTEN connection is killed; a batch is stored while it may be down, then another after it is back
    const reconnected = new Promise<void>((resolve) => {
      const off = notifier.onReconnect(() => {
        off();
        resolve();
      });
    });
    await admin.query("SELECT pg_terminate_backend($1)", [notifier.backendPid]);
    await storeBatch("run-b", [14, 15]);
    await reconnected;
    // no pointer will come for 14 and 15 if they were sent during the gap: the re-read after the reconnect finds them
    await until(got, 15);
    expect(got.map((e) => e.seq).slice(-2)).toEqual([14, 15]);
    await storeBatch("run-b", [16]);
    await until(got, 16);
    unfollow();

    expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(JSON.parse(got[15].event)).toEqual({ runId: "run-b", seq: 16, data: { delta: "t16" } });
  });

  it("re-attaches from a seq, and two followers of one run each get their own stream", async () => {
    await storeBatch("run-c", [1, 2, 3, 4]);
    const late: FollowedEvent[] = [];
    const fresh: FollowedEvent[] = [];
    const offLate = follower.follow("run-c", 2, (e) => late.push(e));
    const offFresh = follower.follow("run-c", 0, (e) => fresh.push(e));
    await storeBatch("run-c", [5]);
    await until(late, 3);
    await until(fresh, 5);
    offLate();
    offFresh();
    expect(late.map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(fresh.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it("a read that fails (the connection was lost mid-read) is tried again: the run's last events still arrive without another pointer", async () => {
    const announced = new Promise<void>((resolve) => {
      const off = notifier.subscribe((p) => {
        if (p.runId === "run-d") {
          off();
          resolve();
        }
      });
    });
    await storeBatch("run-d", [1, 2]);
    await announced; // its pointer has come and gone: nothing else will make the follower read
    // node A's pool as the follower sees it, its next read failing as a connection cut mid-statement would
    let failNext = true;
    const flaky = {
      query: ((...args: Parameters<pg.Pool["query"]>) => {
        if (failNext) {
          failNext = false;
          return Promise.reject(new Error("Connection terminated unexpectedly"));
        }
        return (nodeA.query as (...a: unknown[]) => unknown)(...args);
      }) as pg.Pool["query"],
    };
    const errors: Error[] = [];
    const retrying = new RunEventFollower(flaky, notifier, { onError: (e) => errors.push(e) });
    const got: FollowedEvent[] = [];
    try {
      retrying.follow("run-d", 0, (e) => got.push(e)); // its first read fails; no pointer follows
      await until(got, 2);
      expect(got.map((e) => e.seq)).toEqual([1, 2]);
      expect(errors.map((e) => e.message)).toEqual(["Connection terminated unexpectedly"]);
    } finally {
      retrying.close();
    }
  });
});
