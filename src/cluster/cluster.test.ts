import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { migratePostgres } from "../storage/postgres/migrate.js";
import { createPostgresPool } from "../storage/postgres/pool.js";
import { checkFence, FencedError } from "../storage/postgres/session-leases.js";
import { openPostgresStore } from "../storage/postgres/store.js";
import { ManualClock } from "../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { eventually, openTestNode, type TestNode } from "./cluster.test-support.js";
import { NODE_LOST } from "./takeover.js";

const LEASE = 15_000;

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("several nodes serving one fleet of sessions (cluster layer on Postgres)", () => {
  let ts: TestSchema;
  const open: TestNode[] = [];
  let clock: ManualClock;

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

  async function nodes(...ids: string[]): Promise<TestNode[]> {
    clock = new ManualClock();
    const out: TestNode[] = [];
    for (const nodeId of ids) {
      const n = await openTestNode(ts.options, { nodeId, leaseMs: LEASE, clock });
      open.push(n);
      out.push(n);
    }
    return out;
  }

  async function statusOf(n: TestNode, runId: string) {
    const { rows } = await n.pool.query("SELECT status, stop_reason, node_id FROM runs WHERE run_id = $1", [runId]);
    return rows[0] as { status: string; stop_reason: string | null; node_id: string | null };
  }

  it("a message sent to another node for a busy session joins the owner's queue, in acceptance order", async () => {
    const [a, b] = await nodes("node-a", "node-b");
    await a.accept("agent:main:s", "r1");
    expect(a.queue.adoptedIds()).toEqual(["r1"]);
    await b.accept("agent:main:s", "r2");
    await b.accept("agent:main:s", "r3");
    await eventually(() => a.queue.adoptedIds().length === 3, "node A adopts what node B accepted");
    expect(a.queue.adoptedIds()).toEqual(["r1", "r2", "r3"]);
    expect(b.queue.adoptedIds()).toEqual([]);
    expect((await statusOf(a, "r3")).node_id).toBe("node-a");
    // adopted is not running: the owner's queue decides when each one starts
    expect((await statusOf(a, "r3")).status).toBe("queued");
  });

  it("three nodes routing and sweeping at once never adopt an input twice, and each session runs on one node", async () => {
    const three = await nodes("node-a", "node-b", "node-c");
    const sessions = ["agent:main:x", "agent:main:y", "agent:main:z", "agent:main:w"];
    const sends: Promise<void>[] = [];
    for (let i = 0; i < 12; i++) {
      for (const [k, n] of three.entries()) sends.push(n.accept(sessions[(i + k) % sessions.length], `m${i}-${k}`));
      if (i % 4 === 0) for (const n of three) sends.push(n.node.tick());
    }
    await Promise.all(sends);
    const total = () => three.reduce((sum, n) => sum + n.queue.adopted.length, 0);
    await eventually(() => total() === 36, "every accepted input is adopted somewhere");
    for (const n of three) await n.node.tick();
    const all = three.flatMap((n) => n.queue.adoptedIds());
    expect(all.length).toBe(36);
    expect(new Set(all).size).toBe(36);
    for (const s of sessions) {
      const owners = three.filter((n) => n.queue.adoptedIds(s).length > 0);
      expect(owners.length).toBe(1);
    }
  });

  it("the owner gives the session back at the beat after its queue went idle, and takes it again for an input stored meanwhile", async () => {
    const [a, b] = await nodes("node-a", "node-b");
    await a.accept("agent:main:s", "r1");
    // an input another node stored while A owned the session, whose pointer A never got
    await b.pool.query(
      "INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ('late', 'agent:main:s', 'queued', 1, '{}')",
    );
    await a.queue.start("agent:main:s");
    await a.queue.finish("agent:main:s");
    // idle, the lease is kept for the session's next message until the node's next beat
    await a.node.ownership.serial.idle();
    expect(a.node.ownership.owns("agent:main:s")).toBe(true);
    await a.node.tick();
    await eventually(() => a.queue.adoptedIds().includes("late"), "the late input is adopted after the release");
    await a.node.ownership.serial.idle();
    expect(a.node.ownership.owns("agent:main:s")).toBe(true);
    await a.queue.finish("agent:main:s");
    await a.node.ownership.serial.idle();
    expect(a.node.ownership.owns("agent:main:s")).toBe(true);
    await a.node.tick();
    await a.node.ownership.serial.idle();
    expect(a.node.ownership.owns("agent:main:s")).toBe(false);
    const { rowCount } = await a.pool.query("SELECT 1 FROM session_leases");
    expect(rowCount).toBe(0);
  });

  it("an owner whose LISTEN connection was lost adopts, once reconnected, the input announced meanwhile", async () => {
    const [a] = await nodes("node-a");
    await a.accept("agent:main:s", "r1");
    const pid = a.notifier.backendPid;
    const admin = createPostgresPool(ts.options);
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    // stored by another node while A was deaf: its pointer never reached A, and A's lease keeps the sweeper away
    await admin.query(
      "INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ('gap', 'agent:main:s', 'queued', 1, '{}')",
    );
    await admin.end();
    await eventually(() => a.queue.adoptedIds().includes("gap"), "the owner adopts after reconnecting");
    expect(a.notifier.backendPid).not.toBe(pid);
  });

  it("the sweeper adopts a session whose inputs nobody was told about", async () => {
    const [a] = await nodes("node-a");
    for (const id of ["q1", "q2"]) {
      await a.pool.query(
        "INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ($1, 'agent:main:lost', 'queued', 1, '{}')",
        [id],
      );
    }
    await a.node.tick();
    expect(a.queue.adoptedIds()).toEqual(["q1", "q2"]);
  });

  it("a dead node's running run is reported node_lost on a survivor, which runs its queued inputs in order", async () => {
    const [a, b] = await nodes("node-a", "node-b");
    for (const id of ["r1", "r2", "r3"]) await a.accept("agent:main:s", id);
    expect(await a.queue.start("agent:main:s")).toBe("r1");
    // node A stops beating (a kill -9, a long pause): nothing of it runs any more
    await a.node.stopBeating();
    await b.node.tick();
    expect(b.queue.ended).toEqual([]); // the lease has not expired yet: a live-looking node is left alone
    clock.advance(LEASE + 1);
    await b.node.tick();
    expect(b.queue.ended).toEqual([{ runId: "r1", stopReason: NODE_LOST }]);
    expect(await statusOf(b, "r1")).toMatchObject({ status: "error", stop_reason: NODE_LOST });
    expect(b.queue.adoptedIds()).toEqual(["r2", "r3"]);
    expect((await statusOf(b, "r2")).node_id).toBe("node-b");
    // the zombie: its lease was re-issued, so its token no longer passes the fence and it sees the session lost
    const stale = a.node.ownership.lease("agent:main:s")?.token as number;
    await expect(checkFence(a.pool, "agent:main:s", stale)).rejects.toBeInstanceOf(FencedError);
    expect(await a.node.ownership.reconcile()).toEqual(["agent:main:s"]);
    expect(a.node.ownership.tokenOf("agent:main:s")).toBe(stale);
  });

  it("a node waking from a pause does not start a turn on a lease another node took meanwhile", async () => {
    const [a, b] = await nodes("node-a", "node-b");
    await a.accept("agent:main:s", "r1");
    await a.node.tick();
    // while its beats confirm the lease, a turn's lock is the held lease, at once
    const h = await a.node.locks.acquire("agent:main:s");
    expect(h.fencingToken).toBe(a.node.ownership.tokenOf("agent:main:s"));
    await h.release();
    await a.node.stopBeating();
    clock.advance(LEASE + 1);
    await b.node.tick();
    // A wakes and its queue starts the next turn before any beat of A ran: the lock asks the table first
    await expect(a.node.locks.acquire("agent:main:s")).rejects.toBeInstanceOf(FencedError);
  });

  it("a draining node hands its queued inputs to another node at once, in order, keeping the one it finished", async () => {
    const [a, b] = await nodes("node-a", "node-b");
    for (const id of ["r1", "r2", "r3"]) await a.accept("agent:main:s", id);
    await a.queue.start("agent:main:s");
    await a.queue.finish("agent:main:s"); // r1 ran on A before the drain began
    a.queue.draining = true;
    expect(await a.node.handOff()).toEqual(["agent:main:s"]);
    await eventually(() => b.queue.adoptedIds().length === 2, "node B takes the drained inputs without a lease expiry");
    expect(b.queue.adoptedIds()).toEqual(["r2", "r3"]);
    expect((await statusOf(b, "r1")).status).toBe("ok");
    const { rows } = await b.pool.query("SELECT id FROM nodes ORDER BY id");
    expect(rows.map((r) => r.id)).toEqual(["node-b"]);
  });

  it("a lease whose release failed is given back on the next beat, and the session's input then runs", async () => {
    const [a] = await nodes("node-a");
    // the node holds a lease it does not know of (its DELETE never reached the server); beats would renew it for ever
    await a.pool.query(
      "INSERT INTO session_leases (session_key, node_id, token, acquired_at, expires_at) VALUES ('agent:main:o', 'node-a', nextval('lease_tokens'), $1, $2)",
      [clock.now(), clock.now() + LEASE],
    );
    await a.pool.query(
      "INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ('o1', 'agent:main:o', 'queued', 1, '{}')",
    );
    await a.node.tick();
    await a.node.ownership.serial.idle();
    await a.node.tick();
    expect(a.queue.adoptedIds()).toEqual(["o1"]);
    expect(a.node.ownership.owns("agent:main:o")).toBe(true);
  });

  it("a lease taken by a step that then failed (its adoption never ran) is given back, and the input runs", async () => {
    const [a] = await nodes("node-a");
    await a.pool.query(
      "INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ('f1', 'agent:main:f', 'queued', 1, '{}')",
    );
    // the lease is taken, the adoption that should follow fails: nothing here runs the session
    await a.node.ownership.serial.run("agent:main:f", () => a.node.ownership.take("agent:main:f"));
    await a.node.tick();
    expect(a.queue.adoptedIds()).toEqual(["f1"]);
  });

  it("one node at a time leads a role (cron); a survivor takes it once the leader's lease is gone", async () => {
    const [a, b, c] = await nodes("node-a", "node-b", "node-c");
    const leading = new Set<string>();
    for (const n of [a, b, c]) {
      const id = n.node.nodeId;
      n.node.lead("cron", { gain: () => void leading.add(id), lose: () => void leading.delete(id) });
    }
    await Promise.all([a, b, c].map((n) => n.node.tick()));
    expect(leading.size).toBe(1);
    const first = [...leading][0];
    const leader = [a, b, c].find((n) => n.node.nodeId === first) as TestNode;
    const others = [a, b, c].filter((n) => n !== leader);
    // the leader dies: after its lease, exactly one survivor leads
    await leader.node.stopBeating();
    leading.clear();
    clock.advance(LEASE + 1);
    await Promise.all(others.map((n) => n.node.tick()));
    expect(leading.size).toBe(1);
    expect([...leading][0]).not.toBe(first);
    // the new leader drains: it stops leading, and the other survivor takes over at once (no expiry waited for)
    const next = others.find((n) => leading.has(n.node.nodeId)) as TestNode;
    next.queue.draining = true;
    await next.node.handOff();
    await eventually(
      () => leading.size === 1 && !leading.has(next.node.nodeId),
      "the last node leads after the hand-off",
    );
  });

  it("chat.abort sent to a node that does not run the session reaches the owner, which aborts", async () => {
    const [a, b] = await nodes("node-a", "node-b");
    await a.accept("agent:main:s", "r1");
    b.node.forwardAbort("agent:main:s", "r1");
    await eventually(() => a.queue.aborted.length > 0, "the owner hears the abort");
    expect(a.queue.aborted).toEqual(["agent:main:s r1"]);
    expect(b.queue.aborted).toEqual([]);
  });

  it("a draining node takes no new session, and its accepted input goes to the owner-to-be", async () => {
    const [a, b] = await nodes("node-a", "node-b");
    a.queue.draining = true;
    await a.accept("agent:main:s", "r1");
    expect(a.queue.adoptedIds()).toEqual([]);
    await b.node.tick();
    expect(b.queue.adoptedIds()).toEqual(["r1"]);
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a zombie node (its lease taken while it was paused) on the Postgres store", () => {
  let ts: TestSchema;
  const open: TestNode[] = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
  });
  afterAll(async () => {
    for (const n of open.splice(0)) await n.close();
    await ts?.drop();
  });

  it("an input that starts at once where it was accepted is adopted by its running write, one that waits by an adoption write", async () => {
    const clock = new ManualClock();
    const store = await openPostgresStore(ts.options);
    const a = await openTestNode(ts.options, { nodeId: "node-a", leaseMs: LEASE, clock, store });
    open.push(a);
    a.queue.startsAtOnce = true;
    const key = "agent:main:at-once";
    const input = (runId: string) =>
      store.acceptInput(
        { key, agentId: "main", now: clock.now() },
        { runId, sessionKey: key, status: "queued", acceptedAt: clock.now(), params: { message: runId } },
      );
    const nodeOf = async (runId: string) =>
      (await store.pool.query("SELECT node_id FROM runs WHERE run_id = $1", [runId])).rows[0]?.node_id;
    await input("s1");
    await a.node.routeStored(key);
    expect(a.queue.adoptedIds(key)).toEqual(["s1"]);
    // no adoption write: the turn's `running` write (fenced) puts it on this node
    expect(await nodeOf("s1")).toBeNull();
    await store.updateRuns([{ runId: "s1", patch: { status: "running", startedAt: clock.now() } }]);
    expect(await nodeOf("s1")).toBe("node-a");
    // the session is busy: the next input waits in the local queue, adopted by a write of its own
    await input("s2");
    await a.node.routeStored(key);
    expect(a.queue.adoptedIds(key)).toEqual(["s1", "s2"]);
    expect(await nodeOf("s2")).toBe("node-a");
    expect((await store.getRun("s2"))?.status).toBe("queued");
    // the next case's takeover must not find these
    await store.updateRuns(["s1", "s2"].map((runId) => ({ runId, patch: { status: "ok" as const } })));
    open.splice(open.indexOf(a), 1);
    await a.close();
  });

  it("writes nothing more for the session: its transcript and run writes fail with FencedError, the new owner's go through", async () => {
    const clock = new ManualClock();
    const storeA = await openPostgresStore(ts.options);
    const storeB = await openPostgresStore(ts.options);
    const a = await openTestNode(ts.options, { nodeId: "node-a", leaseMs: LEASE, clock, store: storeA });
    open.push(a);
    const b = await openTestNode(ts.options, { nodeId: "node-b", leaseMs: LEASE, clock, store: storeB });
    open.push(b);
    const key = "agent:main:z";
    const now = clock.now();
    await storeA.acceptInput(
      { key, agentId: "main", now },
      { runId: "z1", sessionKey: key, status: "queued", acceptedAt: now, params: { message: "hi" } },
    );
    await a.node.routeStored(key);
    await a.queue.start(key);
    const row = { sessionKey: key, kind: "message" as const, runId: "z1", createdAt: now };
    await storeA.appendTranscript([{ ...row, message: { role: "user", content: "hi" } }]);
    // A pauses past its lease; B takes the session over
    await a.node.stopBeating();
    clock.advance(LEASE + 1);
    await b.node.tick();
    expect(b.queue.ended).toEqual([{ runId: "z1", stopReason: NODE_LOST }]);
    // A wakes up and carries on with its turn: none of it lands
    const late = {
      ...row,
      message: { role: "assistant" as const, content: [{ type: "text" as const, text: "late" }] },
    };
    await expect(storeA.appendTranscript([late])).rejects.toBeInstanceOf(FencedError);
    await expect(storeA.updateRun("z1", { status: "ok" })).rejects.toBeInstanceOf(FencedError);
    expect((await storeB.getRun("z1"))?.status).toBe("error");
    expect((await storeB.readTranscript(key)).map((r) => r.runId)).toEqual(["z1"]);
    // the new owner writes
    await storeB.appendTranscript([{ ...row, runId: "z2", message: { role: "user", content: "next" } }]);
    expect((await storeB.readTranscript(key)).length).toBe(2);
  });
});
