/*
 * A model call's spend notice rides its cost row's commit (issue 33): another node hears of the call when the row it
 * could read is stored, and the notice makes no statement of its own. Two nodes' stores on one real Postgres schema:
 * A meters calls through its SpendControl and relay; B only listens on the channel.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configSchema } from "../config/schema.js";
import { RunEventWriter } from "../events/run-event-writer.js";
import { AgentEventBus } from "../infra/events.js";
import { silentLogger } from "../infra/logger.js";
import { type NotifyPointer, notify, type PgNotifier } from "../storage/postgres/notifier.js";
import { openPostgresStore, type PostgresStore } from "../storage/postgres/store.js";
import { isTransientPostgresError } from "../storage/postgres/transient-errors.js";
import { ManualClock } from "../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { SpendControl } from "./spend-control.js";
import { PgSpendRelay } from "./spend-relay.js";

const USAGE = { input: 500, output: 100, cacheRead: 0, cacheWrite: 0, total: 600 };
const SERVED = { provider: "fake", model: "m", cost: { input: 10, output: 30, cacheRead: 0, cacheWrite: 0 } };

/**
 * Resolves once `listener` has received every notification committed on the store's channel before now: they arrive
 * in commit order, so a marker sent now arrives after them.
 */
async function allNoticesHeard(store: PostgresStore, listener: PgNotifier): Promise<void> {
  const id = `${Math.random()}`;
  const marker = new Promise<void>((resolve) => {
    const off = listener.subscribe((p) => {
      if (p.k === "sync" && p.id === id) {
        off();
        resolve();
      }
    });
  });
  await notify(store.pool, store.channel, { k: "sync", id });
  await marker;
}

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("spend notices across nodes (real Postgres)", () => {
  let ts: TestSchema;
  let a: PostgresStore;
  let b: PostgresStore;
  let listenB: PgNotifier;
  let spend: SpendControl;
  let relay: PgSpendRelay;
  let writer: RunEventWriter;
  /** A's statements outside a transaction (the pool's own query calls) */
  const statements: string[] = [];
  /** what B heard: each spend notice with the count of cost rows B could read when it arrived */
  const heard: Array<{ pointer: NotifyPointer; rowsReadable: Promise<number> }> = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    a = await openPostgresStore({ ...ts.options, poolMax: 4 });
    b = await openPostgresStore({ ...ts.options, poolMax: 2 });
    listenB = await b.notifier();
    listenB.subscribe((p) => {
      if (p.k !== "spend") return;
      const rowsReadable = b.pool
        .query<{ n: number }>("SELECT count(*)::int AS n FROM cost_ledger")
        .then((r) => r.rows[0].n);
      heard.push({ pointer: p, rowsReadable });
    });
    // a clock that stands still: no ledger or writer timer fires on its own, only the test's flushes write
    const clock = new ManualClock();
    const bus = new AgentEventBus({ now: () => clock.now() });
    const config = configSchema.parse({}).limits;
    spend = new SpendControl({ config, store: a, clock, logger: silentLogger, bus });
    relay = await PgSpendRelay.start(a, spend, (err) => expect.fail(err.message), a);
    writer = new RunEventWriter({
      store: a,
      clock,
      logger: silentLogger,
      isTransientStoreError: isTransientPostgresError,
    });
    writer.carry(spend.ledger.rider());
    const query = a.pool.query.bind(a.pool);
    a.pool.query = ((text: unknown, ...rest: unknown[]) => {
      statements.push(typeof text === "string" ? text : String((text as { text?: string }).text));
      return (query as (...args: unknown[]) => unknown)(text, ...rest);
    }) as unknown as typeof a.pool.query;
  });
  afterAll(async () => {
    relay?.close();
    await writer?.close();
    await a?.close();
    await b?.close();
    await ts?.drop();
  });

  const settled = () => allNoticesHeard(b, listenB);

  function call(runId: string): void {
    spend.recordCall({ runId, sessionKey: "s1", agentId: "main", limits: undefined }, SERVED, USAGE);
  }

  it("a call is announced by the run-event batch that stores its cost row, not by a statement of its own", async () => {
    heard.length = 0;
    writer.add({ runId: "r1", seq: 1, ts: 1, sessionKey: "s1", stream: "assistant", data: { delta: "x" } });
    call("r1");
    await relay.flushed();
    await settled();
    expect(heard).toHaveLength(0);

    statements.length = 0;
    await writer.flush();
    await settled();
    expect(heard.map((h) => h.pointer)).toEqual([
      expect.objectContaining({ k: "spend", t: "call", a: "main", s: "s1", n: 600 }),
    ]);
    expect(await heard[0].rowsReadable).toBe(1);
    // the notice rides the batch's one statement (run events, audit and cost rows together): no statement of its own
    const notifying = statements.filter((s) => s.includes("pg_notify"));
    expect(notifying).toHaveLength(1);
    expect(notifying[0]).toContain("INSERT INTO run_events");
    expect(notifying[0]).toContain("INSERT INTO cost_ledger");
  });

  it("a cost row the ledger writes alone carries its notice in the one statement that inserts it", async () => {
    heard.length = 0;
    call("r2");
    statements.length = 0;
    await spend.ledger.flush();
    await settled();
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain("INSERT INTO cost_ledger");
    // with its row's id: a node that read the row already does not count the call again
    const [stored] = await a.listCostRows({ limit: 1, afterSeq: (await a.listCostRows({ limit: 1 }))[0].seq });
    expect(heard.map((h) => h.pointer)).toEqual([
      expect.objectContaining({ k: "spend", t: "call", n: 600, i: stored.id }),
    ]);
    expect(await heard[0].rowsReadable).toBe(2);
  });

  it("a cost row stored already is not announced again (another node would count the call twice)", async () => {
    const [stored] = await a.listCostRows({ limit: 1 });
    const { seq: _seq, ...row } = stored;
    heard.length = 0;
    await a.appendCostRows([row]);
    await settled();
    expect(heard).toEqual([]);
  });

  it("run notices (a token's run accepted, ended) still go at once", async () => {
    heard.length = 0;
    spend.acceptedRun("tok", "r3");
    spend.endedRun("r3");
    await relay.flushed();
    await settled();
    expect(heard.map((h) => h.pointer.t)).toEqual(["accepted", "ended"]);
  });
});

/*
 * Two nodes' window sums on one real Postgres schema (issue 33): node B reads node A's cost row and hears A's notice
 * for it, in an order the test sets: B's notices are held until the test lets them through, and B's read can wait at
 * a gate after it ran. A call counts once on B, and is never missed.
 */
describe.skipIf(!testPostgresUrl)("a call counts once on the node that hears it (real Postgres)", () => {
  const NOW = Date.UTC(2026, 11, 5, 12);
  const config = configSchema.parse({
    limits: { syncIntervalMs: 600_000, budgets: [{ scope: "agent", window: "day", maxUsd: 0.01 }] },
  }).limits;
  let ts: TestSchema;
  let a: PostgresStore;
  let b: PostgresStore;
  let listenB: PgNotifier;
  let spendA: SpendControl;
  let relayA: PgSpendRelay;
  const relaysB: PgSpendRelay[] = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    a = await openPostgresStore({ ...ts.options, poolMax: 2 });
    b = await openPostgresStore({ ...ts.options, poolMax: 2 });
    listenB = await b.notifier();
    const clock = new ManualClock(NOW);
    const bus = new AgentEventBus({ now: () => clock.now() });
    spendA = new SpendControl({ config, store: a, clock, logger: silentLogger, bus });
    relayA = await PgSpendRelay.start(a, spendA, (err) => expect.fail(err.message), a);
  });
  afterAll(async () => {
    relayA?.close();
    for (const r of relaysB) r.close();
    await a?.close();
    await b?.close();
    await ts?.drop();
  });

  const settled = () => allNoticesHeard(b, listenB);

  /** Node B: its spend control with a relay whose notices wait until `release`, and a read that can wait at a gate. */
  async function nodeB() {
    const held: NotifyPointer[] = [];
    const hearers: Array<(p: NotifyPointer) => void> = [];
    listenB.subscribe((p) => {
      if (p.k === "spend") held.push(p);
    });
    let gate: { reached: () => void; opened: Promise<void> } | undefined;
    const store = {
      appendCostRows: b.appendCostRows.bind(b),
      listCostRows: b.listCostRows.bind(b),
      async sumCost(q: Parameters<PostgresStore["sumCost"]>[0]) {
        const sum = await b.sumCost(q);
        if (gate) {
          gate.reached();
          await gate.opened;
        }
        return sum;
      },
    };
    const clock = new ManualClock(NOW);
    const bus = new AgentEventBus({ now: () => clock.now() });
    const spend = new SpendControl({ config, store, clock, logger: silentLogger, bus });
    const source = {
      pool: b.pool,
      channel: b.channel,
      notifier: async () =>
        ({
          subscribe: (fn: (p: NotifyPointer) => void) => {
            hearers.push(fn);
            return () => {};
          },
        }) as unknown as PgNotifier,
    };
    relaysB.push(await PgSpendRelay.start(source, spend, (err) => expect.fail(err.message)));
    return {
      spend,
      /** B hears what it was sent so far */
      release(): void {
        for (const p of held.splice(0)) for (const hear of hearers) hear(p);
      },
      /** the next read waits, after it ran, until `open` */
      holdRead(): { atGate: Promise<void>; open: () => void } {
        let open: () => void = () => {};
        let reached: () => void = () => {};
        const atGate = new Promise<void>((resolve) => {
          reached = resolve;
        });
        gate = {
          reached,
          opened: new Promise<void>((resolve) => {
            open = () => {
              gate = undefined;
              resolve();
            };
          }),
        };
        return { atGate, open: () => open() };
      },
    };
  }

  /** A $0.008 call on node A, stored (its notice sent at the commit) and received by B's connection. */
  async function callOnA(agentId: string, runId: string): Promise<void> {
    spendA.recordCall({ runId, sessionKey: `agent:${agentId}:main`, agentId, limits: undefined }, SERVED, USAGE);
    await spendA.ledger.flush();
    await settled();
  }

  const who = (agentId: string) => ({ agentId, sessionKey: `agent:${agentId}:main` });

  it("node A's call that node B read from the ledger and then heard announced counts once: B admits its own call under the budget", async () => {
    const node = await nodeB();
    await callOnA("one", "p1");
    // B loads the window after A's row committed, and hears A's notice only then
    expect(await node.spend.intakeBreach(who("one"))).toBeUndefined();
    node.release();
    // $0.008 of $0.01: counted twice it would be $0.016 and B would refuse
    expect(await node.spend.intakeBreach(who("one"))).toBeUndefined();
    // A's next call crosses the budget on B
    await callOnA("one", "p2");
    node.release();
    expect(await node.spend.intakeBreach(who("one"))).toMatchObject({ code: "budget_exceeded" });
  });

  it("node A's call heard while node B's read of the window is on its way back is not lost", async () => {
    const node = await nodeB();
    const hold = node.holdRead();
    // B's read runs before A's call and its answer waits; A's notice arrives meanwhile
    const loading = node.spend.intakeBreach(who("two"));
    await hold.atGate;
    await callOnA("two", "p3");
    node.release();
    hold.open();
    expect(await loading).toBeUndefined();
    // B counts A's first call: the second one crosses the budget
    await callOnA("two", "p4");
    node.release();
    expect(await node.spend.intakeBreach(who("two"))).toMatchObject({ code: "budget_exceeded" });
  });
});
