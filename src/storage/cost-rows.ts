import type { CostQuery, CostRow, CostSumQuery, CostTotals } from "./types.js";

/** The cost ledger's filters, as `column op` pairs both backends bind with their own placeholder. */
export const costFilters: ReadonlyArray<[keyof CostQuery, string]> = [
  ["since", "ts >="],
  ["until", "ts <"],
  ["agentId", "agent_id ="],
  ["sessionKey", "session_key ="],
  ["token", "token ="],
];

/** The WHERE clause and its arguments for `query`; `placeholder(n)` is `?` (SQLite) or `$n` (Postgres). */
export function costWhere(
  query: CostQuery & { afterSeq?: number },
  placeholder: (n: number) => string,
): { clause: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  for (const [field, comparison] of costFilters) {
    const value = query[field];
    if (value === undefined) continue;
    args.push(value);
    where.push(`${comparison} ${placeholder(args.length)}`);
  }
  if (query.afterSeq !== undefined) {
    args.push(query.afterSeq);
    where.push(`seq > ${placeholder(args.length)}`);
  }
  return { clause: where.length > 0 ? `WHERE ${where.join(" AND ")}` : "", args };
}

/** The ledger row's columns in insert order, from a row. */
export function costColumns(r: CostRow): unknown[] {
  return [
    r.id,
    r.ts,
    r.runId,
    r.sessionKey,
    r.agentId,
    r.token ?? null,
    r.provider,
    r.model,
    r.authProfile ?? null,
    r.inputTokens,
    r.outputTokens,
    r.cacheReadTokens,
    r.cacheWriteTokens,
    r.totalTokens,
    r.costUsd ?? null,
  ];
}

export const COST_COLUMNS =
  "id, ts, run_id, session_key, agent_id, token, provider, model, auth_profile, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, total_tokens, cost_usd";

/** The sums every backend selects, in one row: usd, tokens, calls, unpriced. */
export const COST_SUMS =
  "COALESCE(SUM(cost_usd), 0) AS usd, COALESCE(SUM(total_tokens), 0) AS tokens, COUNT(*) AS calls, " +
  "COALESCE(SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END), 0) AS unpriced";

/** At most this many ids come with a sum (`CostSumQuery.idsSince`): the newest, so a hot window's load stays small. */
export const COST_SUM_MAX_IDS = 2000;

/**
 * `sumCost`'s one statement: the sums, and with `idsSince` the newest recent ids (`ids`: a JSON array on SQLite,
 * `jsonIds`; an array on Postgres) from a subquery, so both come from one read. `placeholder` as in `costWhere`.
 */
export function costSumSql(
  query: CostSumQuery,
  placeholder: (n: number) => string,
  jsonIds: boolean,
): { sql: string; args: unknown[] } {
  if (query.idsSince === undefined) {
    const { clause, args } = costWhere(query, placeholder);
    return { sql: `SELECT ${COST_SUMS} FROM cost_ledger ${clause}`, args };
  }
  // the subquery comes first in the text, so its arguments come first (SQLite's `?` bind in order)
  const since = Math.max(query.idsSince, query.since ?? Number.NEGATIVE_INFINITY);
  const recent = costWhere({ ...query, since }, placeholder);
  const limit = placeholder(recent.args.length + 1);
  const sums = costWhere(query, (n) => placeholder(n + recent.args.length + 1));
  const agg = jsonIds ? "json_group_array(id)" : "array_agg(id)";
  const ids = `(SELECT ${agg} FROM (SELECT id FROM cost_ledger ${recent.clause} ORDER BY ts DESC LIMIT ${limit}) AS recent)`;
  return {
    sql: `SELECT ${COST_SUMS}, ${ids} AS ids FROM cost_ledger ${sums.clause}`,
    args: [...recent.args, COST_SUM_MAX_IDS, ...sums.args],
  };
}

export function toCostTotals(r: Record<string, unknown>): CostTotals {
  const totals: CostTotals = {
    usd: Number(r.usd),
    tokens: Number(r.tokens),
    calls: Number(r.calls),
    unpricedCalls: Number(r.unpriced),
  };
  if (r.ids === undefined) return totals;
  // Postgres' array_agg of no rows is null; SQLite's json_group_array is '[]'
  const ids = typeof r.ids === "string" ? (JSON.parse(r.ids) as string[]) : ((r.ids as string[] | null) ?? []);
  return { ...totals, ids };
}

export function toCostRow(r: Record<string, unknown>): CostRow & { seq: number } {
  return {
    seq: Number(r.seq),
    id: r.id as string,
    ts: Number(r.ts),
    runId: r.run_id as string,
    sessionKey: r.session_key as string,
    agentId: r.agent_id as string,
    ...(r.token != null ? { token: r.token as string } : {}),
    provider: r.provider as string,
    model: r.model as string,
    ...(r.auth_profile != null ? { authProfile: r.auth_profile as string } : {}),
    inputTokens: Number(r.input_tokens),
    outputTokens: Number(r.output_tokens),
    cacheReadTokens: Number(r.cache_read_tokens),
    cacheWriteTokens: Number(r.cache_write_tokens),
    totalTokens: Number(r.total_tokens),
    ...(r.cost_usd != null ? { costUsd: Number(r.cost_usd) } : {}),
  };
}
