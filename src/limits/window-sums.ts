/**
 * Budget window sums kept in memory, so a check before a model call is a map lookup. A window's sum is loaded from
 * the cost ledger the first time a budget needs it (plus the rows this node has not written yet), then kept current
 * by `add` for every call this node makes and every call another node announces (limits/spend-relay.ts). It is
 * re-read from the store when older than `syncIntervalMs`, which also catches announcements a node missed.
 *
 * A call is counted once, and a sum is never less than what was written. Another node announces a call when its
 * row commits, so a notice heard before a load started is for a row the read will see (the window is not loaded:
 * `add` passes it by), and one heard after may or may not be in the read. The read therefore names the recent rows
 * it summed (`sumCost`'s `idsSince`: rows from `NOTICE_HORIZON_MS` before the load, and this node's own unwritten
 * rows): a notice for one of them is skipped. Calls added while a load runs (heard, or made here) are kept with the
 * load and counted after it unless the read or this node's unwritten rows already have them; the same check keeps
 * a row of ours written while the read ran (in the read and in the rows unwritten before it) from counting twice.
 * The names are kept for `NOTICE_HORIZON_MS` after the load (a notice comes at its row's commit: later than that
 * only when a node's clock or the notice is that far behind), a load names at most `COST_SUM_MAX_IDS` rows (the
 * newest), and a notice from a node that sends no row id (an older version) is always counted: in those cases a
 * call may still count twice until the next sync, erring on the side of stopping, never the other way.
 */
import type { Clock } from "../infra/clock.js";
import type { CostQuery, CostRow, CostTotals, Store } from "../storage/types.js";

export interface Spent {
  usd: number;
  tokens: number;
}

/** A call as the sums see it; `id` (the cost row's) is absent only in a notice from a node that does not send it. */
export type CountedCall = Pick<CostRow, "agentId" | "sessionKey" | "token" | "ts" | "totalTokens" | "costUsd"> & {
  id?: string;
};

interface Window {
  filter: Pick<CostQuery, "agentId" | "sessionKey" | "token">;
  since: number;
  until: number;
}

interface Entry extends Window, Spent {
  loadedAt: number;
  /** rows the read counted whose notice may still come; dropped NOTICE_HORIZON_MS after the load */
  read: Set<string> | undefined;
}

/** A load under way: the calls added meanwhile, to count once it has read. */
interface Pending extends Window {
  added: CountedCall[];
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
/** How long after its row's ts another node's notice may still come (the row's write, the delivery, clock skew). */
export const NOTICE_HORIZON_MS = 10_000;

function inWindow(w: Window, row: CountedCall): boolean {
  const f = w.filter;
  return (
    row.ts >= w.since &&
    row.ts < w.until &&
    (f.agentId === undefined || f.agentId === row.agentId) &&
    (f.sessionKey === undefined || f.sessionKey === row.sessionKey) &&
    (f.token === undefined || f.token === row.token)
  );
}

export class WindowSums {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Entry>>();
  private readonly pending = new Set<Pending>();

  constructor(private readonly opts: WindowSumsOptions) {}

  /**
   * The spend of `filter` in [since, until). `key` names the window (a rolling window keeps one key while its start
   * moves: its sum is re-read at each sync, and spend that left it meanwhile still counts until then).
   */
  async spent(
    key: string,
    filter: Window["filter"],
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
      load = this.load(key, { filter, since, until }).finally(() => this.loading.delete(key));
      this.loading.set(key, load);
    }
    return load;
  }

  /** A call this node made, or one another node announced: every loaded window it falls in grows. */
  add(row: CountedCall): void {
    for (const p of this.pending) if (inWindow(p, row)) p.added.push(row);
    let now: number | undefined;
    for (const e of this.entries.values()) {
      if (!inWindow(e, row)) continue;
      if (e.read && row.id !== undefined) {
        now ??= this.opts.clock.now();
        if (now - e.loadedAt > NOTICE_HORIZON_MS) e.read = undefined;
        // the read counted it already (a row is announced once: its name is not needed again)
        else if (e.read.delete(row.id)) continue;
      }
      e.usd += row.costUsd ?? 0;
      e.tokens += row.totalTokens;
    }
  }

  private async load(key: string, window: Window): Promise<Entry> {
    const loadedAt = this.opts.clock.now();
    // this node's rows not written before the read (a copy: the ledger's queue is spliced when written) and after it:
    // a row written while the read ran is in the read or in `before`, one made meanwhile in `after` or `pending`
    const before = this.opts.unwritten().filter((r) => inWindow(window, r));
    // the read names the rows that may also be heard or be in `before`
    let idsSince = loadedAt - NOTICE_HORIZON_MS;
    for (const r of before) idsSince = Math.min(idsSince, r.ts);
    const pending: Pending = { ...window, added: [] };
    this.pending.add(pending);
    let sum: CostTotals;
    try {
      sum = await this.opts.store.sumCost({ ...window.filter, since: window.since, until: window.until, idsSince });
    } finally {
      this.pending.delete(pending);
    }
    const read = new Set(sum.ids);
    const counted = new Set(read);
    const { filter, since, until } = window;
    const entry: Entry = { filter, since, until, loadedAt, usd: sum.usd, tokens: sum.tokens, read: undefined };
    const after = this.opts.unwritten().filter((r) => inWindow(window, r));
    for (const row of [...before, ...after, ...pending.added]) {
      if (row.id !== undefined) {
        if (counted.has(row.id)) {
          // heard while loading, and in the read: not to be skipped again
          read.delete(row.id);
          continue;
        }
        counted.add(row.id);
      }
      entry.usd += row.costUsd ?? 0;
      entry.tokens += row.totalTokens;
    }
    // most windows read no recent row: no set to keep
    if (read.size > 0) entry.read = read;
    // in the map before any other call is added (a caller awaiting this load resumes only later)
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return entry;
  }
}
