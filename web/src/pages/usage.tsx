import { useEffect, useState } from "preact/hooks";
import type { UsageSummaryResult } from "../../../src/protocol/usage";
import { sessionHref, shortKey, tokens, usd } from "../format";
import type { ConsoleModel } from "../model";

const GROUPS = ["agent", "session", "token", "model"] as const;
const PERIODS: Array<[string, number]> = [
  ["Today and yesterday", 2],
  ["7 days", 7],
  ["30 days", 30],
];
const DAY_MS = 24 * 60 * 60 * 1000;

/** What the cost ledger says was spent (usage.summary): per agent, session, token or model, per day and in total. */
export function UsagePage(props: { model: ConsoleModel }) {
  const { model } = props;
  const [by, setBy] = useState<(typeof GROUPS)[number]>("agent");
  const [days, setDays] = useState(7);
  const [summary, setSummary] = useState<UsageSummaryResult | undefined>();
  const [error, setError] = useState<string | undefined>();
  const open = model.gw.state.kind === "open";
  useEffect(() => {
    if (!open) return;
    model.gw
      .call<UsageSummaryResult>("usage.summary", { by, since: Date.now() - days * DAY_MS })
      .then((s) => {
        setSummary(s);
        setError(undefined);
      })
      .catch((err: Error) => setError(err.message));
  }, [open, by, days]);
  const label = (key: string) => (by === "session" ? <a href={sessionHref(key)}>{shortKey(key)}</a> : key);
  return (
    <section aria-labelledby="usage-h">
      <h1 id="usage-h">Usage</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          By
          <select value={by} onChange={(e) => setBy((e.target as HTMLSelectElement).value as typeof by)}>
            {GROUPS.map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </label>
        <label>
          Period
          <select value={days} onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}>
            {PERIODS.map(([name, n]) => (
              <option key={n} value={n}>
                {name}
              </option>
            ))}
          </select>
        </label>
      </form>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {summary && (
        <p data-testid="usage-total">
          {usd(summary.total.usd)} · {tokens(summary.total.tokens)} tokens · {summary.total.calls} model calls
          {summary.total.unpricedCalls > 0 && ` (${summary.total.unpricedCalls} unpriced: tokens only)`} · days in{" "}
          {summary.timeZone}
        </p>
      )}
      <table class="list" data-testid="usage-groups">
        <caption class="sr-only">Spend per {by}, most expensive first</caption>
        <thead>
          <tr>
            <th scope="col">{by}</th>
            <th scope="col" class="num">
              Cost
            </th>
            <th scope="col" class="num">
              Tokens
            </th>
            <th scope="col" class="num">
              Calls
            </th>
          </tr>
        </thead>
        <tbody>
          {(summary?.groups ?? []).map((g) => (
            <tr key={g.key}>
              <td data-label={by}>{label(g.key)}</td>
              <td data-label="Cost" class="num">
                {usd(g.usd)}
              </td>
              <td data-label="Tokens" class="num">
                {tokens(g.tokens)}
              </td>
              <td data-label="Calls" class="num">
                {g.calls}
                {g.unpricedCalls > 0 && ` (${g.unpricedCalls} unpriced)`}
              </td>
            </tr>
          ))}
          {summary && summary.groups.length === 0 && (
            <tr>
              <td colSpan={4} class="empty">
                No model calls in this period.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <h2>Per day</h2>
      <table class="list" data-testid="usage-days">
        <caption class="sr-only">Spend per day and {by}</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">{by}</th>
            <th scope="col" class="num">
              Cost
            </th>
            <th scope="col" class="num">
              Tokens
            </th>
          </tr>
        </thead>
        <tbody>
          {(summary?.days ?? []).map((d) => (
            <tr key={`${d.day} ${d.key}`}>
              <td data-label="Day">{d.day}</td>
              <td data-label={by}>{label(d.key)}</td>
              <td data-label="Cost" class="num">
                {usd(d.usd)}
              </td>
              <td data-label="Tokens" class="num">
                {tokens(d.tokens)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
