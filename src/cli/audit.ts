import { AUDIT_LIST_MAX_LIMIT } from "../protocol/params.js";
import type { AuditEvent, AuditListResult } from "../protocol/payloads.js";
import { connectGateway, resolveGatewayTarget } from "./agent-remote.js";
import { colorFor, painter } from "./color.js";
import { CliError, EXIT } from "./exit-codes.js";
import { formatLocalTime } from "./local-time.js";

export interface AuditCliOptions {
  url?: string;
  token?: string;
  config?: string;
  session?: string;
  since?: string;
  limit?: string;
  json?: boolean;
  color?: boolean;
}

const DEFAULT_ROWS = 100;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: an ISO time ("2026-11-30T18:00:00Z"), or a duration back from now ("90s", "15m", "1h", "7d"). */
export function parseSince(raw: string, now: number): number {
  const text = raw.trim();
  const duration = /^(\d+)\s*([smhd])$/i.exec(text);
  if (duration) return now - Number(duration[1]) * UNIT_MS[duration[2].toLowerCase()];
  const at = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) {
    throw new CliError(
      `--since: expected an ISO time (2026-11-30T18:00:00Z) or a duration (90s, 15m, 1h, 7d), got "${raw}"`,
    );
  }
  return at;
}

function parseRows(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_ROWS;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n <= 0) {
    throw new CliError(`--limit: expected a positive whole number, got "${raw}"`);
  }
  return n;
}

/** One line per row: time, action, status (and code), the run, the tool, who started it, the session. */
export function formatAuditRow(e: AuditEvent, color: boolean): string {
  const { green, red, dim } = painter(color);
  const bad = e.status === "failed" || e.status === "timed_out" || e.status === "blocked" || e.status === "cancelled";
  const status = `${e.status}${e.code !== undefined ? `(${e.code})` : ""}`;
  const tool = e.toolName !== undefined ? ` ${e.toolName}#${e.toolCallFingerprint ?? "?"}` : "";
  return [
    dim(formatLocalTime(e.occurredAt)),
    `${e.action}${tool}`,
    bad ? red(status) : e.status === "succeeded" ? green(status) : status,
    `run=${e.runId}`,
    `actor=${e.actor}`,
    `session=${e.sessionKey}`,
  ].join("  ");
}

/**
 * `loopgate audit`: the newest rows of the gateway's audit ledger (`audit.list`, pages of at most 500), printed
 * oldest first like a log. Asks the running gateway, which also writes what its queue still holds before answering.
 */
export async function runAudit(opts: AuditCliOptions, now = Date.now()): Promise<number> {
  const want = parseRows(opts.limit);
  const after = opts.since !== undefined ? parseSince(opts.since, now) : undefined;
  const { url, token } = resolveGatewayTarget(opts);
  const client = await connectGateway(url, token, ["operator.read"]);
  try {
    const events: AuditEvent[] = [];
    let cursor: string | undefined;
    let dropped = 0;
    do {
      const page = await client.request<AuditListResult>("audit.list", {
        ...(opts.session !== undefined ? { sessionKey: opts.session } : {}),
        ...(after !== undefined ? { after } : {}),
        limit: Math.min(AUDIT_LIST_MAX_LIMIT, want - events.length),
        ...(cursor !== undefined ? { cursor } : {}),
      });
      events.push(...page.events);
      dropped = page.dropped;
      cursor = page.nextCursor;
    } while (cursor !== undefined && events.length < want);
    events.reverse();
    if (opts.json) {
      process.stdout.write(`${JSON.stringify({ events, dropped }, null, 2)}\n`);
    } else {
      const color = colorFor(process.stdout, { flag: opts.color });
      for (const e of events) process.stdout.write(`${formatAuditRow(e, color)}\n`);
      if (events.length === 0) process.stderr.write("no audit rows match\n");
    }
    if (dropped > 0) {
      process.stderr.write(
        `loopgate: the audit ledger dropped ${dropped} row(s) since the gateway started: its write queue was full (audit.queueSize)\n`,
      );
    }
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`the gateway at ${url} did not answer audit.list: ${(err as Error).message}`, EXIT.runError);
  } finally {
    await client.close();
  }
}
