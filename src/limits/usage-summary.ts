import type { UsageSummaryResult, UsageTotals } from "../protocol/usage.js";
import type { CostQuery, CostRow, Store } from "../storage/types.js";

/** Rows read per store call while summing a period. */
const PAGE_ROWS = 5000;

export type UsageGroup = UsageSummaryResult["by"];

const keyOf: Record<UsageGroup, (r: CostRow) => string> = {
  agent: (r) => r.agentId,
  session: (r) => r.sessionKey,
  token: (r) => r.token ?? "(local)",
  model: (r) => `${r.provider}/${r.model}`,
};

function emptyTotals(): UsageTotals {
  return { usd: 0, tokens: 0, inputTokens: 0, outputTokens: 0, calls: 0, unpricedCalls: 0 };
}

function add(t: UsageTotals, r: CostRow): void {
  t.usd += r.costUsd ?? 0;
  t.tokens += r.totalTokens;
  t.inputTokens += r.inputTokens;
  t.outputTokens += r.outputTokens;
  t.calls += 1;
  if (r.costUsd === undefined) t.unpricedCalls += 1;
}

function totalsIn(map: Map<string, UsageTotals>, key: string): UsageTotals {
  const found = map.get(key);
  if (found) return found;
  const fresh = emptyTotals();
  map.set(key, fresh);
  return fresh;
}

/** The calendar day of `ts` in `timeZone`, as YYYY-MM-DD. */
function dayOf(ts: number, format: Intl.DateTimeFormat): string {
  return format.format(new Date(ts));
}

/**
 * usage.summary / `loopgate usage`: the cost ledger's rows of a period, totalled per day (in `timeZone`) and group,
 * per group, and overall. `visible` keeps only the sessions the caller may see (a token confined to some sessions).
 */
export async function summarizeUsage(
  store: Pick<Store, "listCostRows">,
  q: CostQuery & {
    since: number;
    until: number;
    by: UsageGroup;
    timeZone: string;
    visible?: (sessionKey: string) => boolean;
  },
): Promise<UsageSummaryResult> {
  // en-CA formats dates as YYYY-MM-DD
  const format = new Intl.DateTimeFormat("en-CA", {
    timeZone: q.timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  });
  const days = new Map<string, UsageTotals>();
  const groups = new Map<string, UsageTotals>();
  const total = emptyTotals();
  const { by, timeZone, visible, ...filter } = q;
  let afterSeq: number | undefined;
  while (true) {
    const rows = await store.listCostRows({
      ...filter,
      limit: PAGE_ROWS,
      ...(afterSeq !== undefined ? { afterSeq } : {}),
    });
    for (const r of rows) {
      if (visible && !visible(r.sessionKey)) continue;
      const key = keyOf[by](r);
      const dayKey = `${dayOf(r.ts, format)}\u0000${key}`;
      add(totalsIn(days, dayKey), r);
      add(totalsIn(groups, key), r);
      add(total, r);
    }
    if (rows.length < PAGE_ROWS) break;
    afterSeq = rows[rows.length - 1].seq;
  }
  return {
    by,
    since: q.since,
    until: q.until,
    timeZone,
    days: [...days.entries()]
      .map(([k, t]) => {
        const [day, key] = k.split("\u0000");
        return { day, key, ...t };
      })
      .sort((a, b) => a.day.localeCompare(b.day) || a.key.localeCompare(b.key)),
    groups: [...groups.entries()]
      .map(([key, t]) => ({ key, ...t }))
      .sort((a, b) => b.usd - a.usd || b.tokens - a.tokens),
    total,
  };
}
