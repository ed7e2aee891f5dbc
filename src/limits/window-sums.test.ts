import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../infra/logger.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { CostRow, CostSumQuery, CostTotals } from "../storage/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { CostLedger } from "./cost-ledger.js";
import { NOTICE_HORIZON_MS, WindowSums } from "./window-sums.js";

/*
 * Window sums against a real SQLite store, with each step of a load ordered by the test: the store's read is held at
 * a gate (before it runs, or after it ran and before its answer arrives) while the test writes rows, hears other
 * nodes' notices or makes calls. A call must count once, and never be missed.
 */

const stores: SqliteStoreAdapter[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

const NOW = Date.UTC(2026, 11, 5, 12);
const DAY = { since: Date.UTC(2026, 11, 5), until: Date.UTC(2026, 11, 6), rolling: false };
let rows = 0;

function row(over: Partial<CostRow> = {}): CostRow {
  rows++;
  return {
    id: `row-${rows}`,
    ts: NOW - 1000,
    runId: `r${rows}`,
    sessionKey: "agent:ops:main",
    agentId: "ops",
    provider: "fake",
    model: "m",
    inputTokens: 500,
    outputTokens: 100,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    totalTokens: 600,
    costUsd: 0.008,
    ...over,
  };
}

/**
 * Sums over a real store whose reads wait at a gate: `readFirst` runs the read before waiting (its answer is late),
 * otherwise the read runs once the gate opens. `reached` resolves when a read is at the gate.
 */
function setup(opts: { readFirst?: boolean } = {}) {
  const store = new SqliteStoreAdapter(new SqliteStore(":memory:"));
  stores.push(store);
  const clock = new ManualClock(NOW);
  // this node's cost ledger: the clock stands still, so it writes only when the test flushes it
  const ledger = new CostLedger({ store, clock, logger: silentLogger, queueSize: 100 });
  let gated = false;
  let open: () => void = () => {};
  let reached: () => void = () => {};
  const atGate = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const gatedStore = {
    async sumCost(q: CostSumQuery): Promise<CostTotals> {
      if (!gated) return store.sumCost(q);
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      if (opts.readFirst) {
        const sum = await store.sumCost(q);
        reached();
        await opened;
        return sum;
      }
      reached();
      await opened;
      return store.sumCost(q);
    },
  };
  const sums = new WindowSums({
    store: gatedStore,
    clock,
    syncIntervalMs: 600_000,
    unwritten: () => ledger.unwritten(),
  });
  const spent = () => sums.spent("global-day", {}, DAY);
  return {
    store,
    clock,
    sums,
    spent,
    ledger,
    /** starts a load whose read waits at the gate; resolves (with the load) once the read is there */
    async loadAtGate(): Promise<{ done: ReturnType<typeof spent>; open: () => void }> {
      gated = true;
      const done = spent();
      await atGate;
      gated = false;
      return { done, open };
    },
  };
}

describe("window sums: a call counts once", () => {
  it("another node's call read back from the ledger and then announced counts once (a budget would refuse under its limit)", async () => {
    const { store, sums, spent } = setup();
    const other = row();
    await store.appendCostRows([other]);
    expect(await spent()).toMatchObject({ usd: 0.008, tokens: 600 });
    // its notice arrives after the read: the sum must not become $0.016
    sums.add(other);
    expect(await spent()).toMatchObject({ usd: 0.008, tokens: 600 });
    // a later call still counts
    sums.add(row());
    expect((await spent()).usd).toBeCloseTo(0.016, 10);
  });

  it("a call announced while the window loads counts once, whether or not the read saw its row", async () => {
    // the read runs after the row is stored and the notice heard
    const seen = setup();
    const first = await seen.loadAtGate();
    const a = row();
    await seen.store.appendCostRows([a]);
    seen.sums.add(a);
    first.open();
    expect(await first.done).toMatchObject({ usd: 0.008, tokens: 600 });

    // the read ran before the row was stored; the notice comes before the read's answer
    const missed = setup({ readFirst: true });
    const second = await missed.loadAtGate();
    const b = row();
    await missed.store.appendCostRows([b]);
    missed.sums.add(b);
    second.open();
    expect(await second.done).toMatchObject({ usd: 0.008, tokens: 600 });
    // and it is not dropped later as if the read had it
    missed.sums.add(row());
    expect((await missed.spent()).usd).toBeCloseTo(0.016, 10);
  });

  it("a row of this node written while the window loads counts once (it was unwritten when the load began)", async () => {
    const { store, ledger, loadAtGate } = setup();
    const own = row({ agentId: "main", sessionKey: "agent:main:main" });
    ledger.add(own);
    // a run-event batch carries it: unwritten until that batch commits
    const rider = ledger.rider();
    const { cost } = rider.take();
    const load = await loadAtGate();
    // the batch commits while the read waits: the read sees the row, which was unwritten when the load began
    await store.appendCostRows(cost ?? []);
    rider.settle(true);
    load.open();
    expect(await load.done).toMatchObject({ usd: 0.008, tokens: 600 });
  });

  it("a row of this node written after the read and before its answer still counts", async () => {
    const { ledger, loadAtGate } = setup({ readFirst: true });
    ledger.add(row({ agentId: "main", sessionKey: "agent:main:main" }));
    const load = await loadAtGate();
    // the read ran without it; the ledger writes it before the read's answer arrives
    await ledger.flush();
    load.open();
    expect(await load.done).toMatchObject({ usd: 0.008, tokens: 600 });
  });

  it("a call this node makes while the window loads counts, also when its row is written before the read answers", async () => {
    const { sums, ledger, loadAtGate } = setup({ readFirst: true });
    const load = await loadAtGate();
    // the read ran (no rows); the call is made, queued and written before the read's answer arrives
    const own = row({ agentId: "main", sessionKey: "agent:main:main" });
    sums.add(own);
    ledger.add(own);
    await ledger.flush();
    load.open();
    expect(await load.done).toMatchObject({ usd: 0.008, tokens: 600 });
  });

  it("a notice for a row read back counts again only when it comes later than the horizon (erring on the side of stopping)", async () => {
    const { store, clock, sums, spent } = setup();
    const late = row();
    const unread = row({ ts: NOW - NOTICE_HORIZON_MS - 1 });
    await store.appendCostRows([late, unread]);
    expect((await spent()).usd).toBeCloseTo(0.016, 10);
    // `unread` is older than the horizon: the read did not name it, so its (very late) notice counts
    sums.add(unread);
    expect((await spent()).usd).toBeCloseTo(0.024, 10);
    // past the horizon the read's names are forgotten: a notice that late counts too
    clock.advance(NOTICE_HORIZON_MS + 1);
    sums.add(late);
    expect((await spent()).usd).toBeCloseTo(0.032, 10);
  });

  it("a notice without a row id (a node of an older version) always counts", async () => {
    const { store, sums, spent } = setup();
    const other = row();
    await store.appendCostRows([other]);
    await spent();
    const { id: _id, ...noId } = other;
    sums.add(noId);
    expect((await spent()).usd).toBeCloseTo(0.016, 10);
  });
});
