/**
 * Budget window sums kept in memory, so a check before a model call is a map lookup. A window's sum is loaded from
 * the cost ledger the first time a budget needs it (plus the rows this node has not written yet), then kept current
 * by `add` for every call this node makes and every call another node announces (limits/spend-relay.ts). It is
 * re-read from the store when older than `syncIntervalMs`, which also catches announcements a node missed.
 *
 * A sum may count a call twice for a moment (a row announced and also read back), never less than what was
 * written: budgets err on the side of stopping.
 */
import type { Clock } from "../infra/clock.js";
import type { CostQuery, CostRow, Store } from "../storage/types.js";

export interface Spent {
  usd: number;
  tokens: number;
}

interface Entry extends Spent {
  filter: Pick<CostQuery, "agentId" | "sessionKey" | "token">;
  since: number;
  until: number;
  loadedAt: number;
}

export interface WindowSumsOptions {
  store: Pick<Store, "sumCost">;
  clock: Clock;
  syncIntervalMs: number;
  /** rows this node made that may not be in the store yet (the cost ledger's queue) */
  unwritten(): readonly CostRow[];
}

/** How many windows are kept; the least recently used go first (a session budget makes one per session). */
const MAX_ENTRIES = 10_000;

function matches(f: Entry["filter"], row: Pick<CostRow, "agentId" | "sessionKey" | "token">): boolean {
  return (
    (f.agentId === undefined || f.agentId === row.agentId) &&
    (f.sessionKey === undefined || f.sessionKey === row.sessionKey) &&
    (f.token === undefined || f.token === row.token)
  );
}

export class WindowSums {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Entry>>();

  constructor(private readonly opts: WindowSumsOptions) {}

  /**
   * The spend of `filter` in [since, until). `key` names the window (a rolling window keeps one key while its start
   * moves: its sum is re-read at each sync, and spend that left it meanwhile still counts until then).
   */
  async spent(
    key: string,
    filter: Entry["filter"],
    range: { since: number; until: number; rolling: boolean },
  ): Promise<Spent> {
    const { since, until } = range;
    const now = this.opts.clock.now();
    const hit = this.entries.get(key);
    if (hit && (hit.since === since || range.rolling) && now - hit.loadedAt < this.opts.syncIntervalMs) {
      // most recently used last: the map's order is the eviction order
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    let load = this.loading.get(key);
    if (!load) {
      load = this.load(filter, since, until).finally(() => this.loading.delete(key));
      this.loading.set(key, load);
    }
    const entry = await load;
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return entry;
  }

  /** A call this node made, or one another node announced: every loaded window it falls in grows. */
  add(row: Pick<CostRow, "agentId" | "sessionKey" | "token" | "ts" | "totalTokens" | "costUsd">): void {
    for (const e of this.entries.values()) {
      if (row.ts < e.since || row.ts >= e.until || !matches(e.filter, row)) continue;
      e.usd += row.costUsd ?? 0;
      e.tokens += row.totalTokens;
    }
  }

  private async load(filter: Entry["filter"], since: number, until: number): Promise<Entry> {
    const loadedAt = this.opts.clock.now();
    // the rows not written before the read and after it: a row written while the read ran is in one of the two
    const before = this.opts.unwritten();
    const sum = await this.opts.store.sumCost({ ...filter, since, until });
    const seen = new Set<string>();
    const entry: Entry = { filter, since, until, loadedAt, usd: sum.usd, tokens: sum.tokens };
    for (const row of [...before, ...this.opts.unwritten()]) {
      if (seen.has(row.id)) continue;
      seen.add(row.id);
      if (row.ts < since || row.ts >= until || !matches(filter, row)) continue;
      entry.usd += row.costUsd ?? 0;
      entry.tokens += row.totalTokens;
    }
    return entry;
  }
}
