import { USAGE_GROUPS, type UsageSummaryResult, type UsageTotals } from "../protocol/usage.js";
import { connectGateway, resolveGatewayTarget } from "./agent-remote.js";
import { parseSince } from "./audit.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface UsageCliOptions {
  url?: string;
  token?: string;
  config?: string;
  by?: string;
  since?: string;
  agent?: string;
  session?: string;
  json?: boolean;
}

const usd = (n: number) => `$${n.toFixed(4)}`;

function totalsLine(t: UsageTotals): string {
  const unpriced = t.unpricedCalls > 0 ? `, ${t.unpricedCalls} unpriced (tokens only)` : "";
  return `${usd(t.usd)}  ${t.tokens.toLocaleString("en-US")} tokens  ${t.calls} calls${unpriced}`;
}

/** The table: one line per day and group, then per group, then the total. */
export function formatUsage(s: UsageSummaryResult): string {
  if (s.total.calls === 0) return `no model calls since ${new Date(s.since).toISOString()}`;
  const width = Math.max(...s.days.map((d) => d.key.length), s.by.length);
  const lines = [`day (${s.timeZone})  ${s.by.padEnd(width)}  cost`];
  for (const d of s.days) lines.push(`${d.day}  ${d.key.padEnd(width)}  ${totalsLine(d)}`);
  lines.push("", `per ${s.by}:`);
  for (const g of s.groups) lines.push(`  ${g.key.padEnd(width)}  ${totalsLine(g)}`);
  lines.push("", `total  ${totalsLine(s.total)}`);
  return lines.join("\n");
}

/** `loopgate usage [--by agent|session|token|model] [--since 7d] [--json]`: usage.summary of a running gateway. */
export async function runUsage(opts: UsageCliOptions, now = Date.now()): Promise<number> {
  const by = opts.by ?? "agent";
  if (!(USAGE_GROUPS as readonly string[]).includes(by)) {
    throw new CliError(`--by: expected one of ${USAGE_GROUPS.join(", ")}, got "${by}"`, EXIT.usage);
  }
  const since = parseSince(opts.since ?? "7d", now);
  const { url, token } = resolveGatewayTarget(opts);
  const client = await connectGateway(url, token, ["operator.read"]);
  try {
    const summary = await client.request<UsageSummaryResult>("usage.summary", {
      by,
      since,
      ...(opts.agent !== undefined ? { agentId: opts.agent } : {}),
      ...(opts.session !== undefined ? { sessionKey: opts.session } : {}),
    });
    process.stdout.write(`${opts.json ? JSON.stringify(summary) : formatUsage(summary)}\n`);
    return EXIT.ok;
  } finally {
    await client.close();
  }
}
