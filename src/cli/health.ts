import type { HealthResult } from "../protocol/payloads.js";
import { connectGateway, resolveGatewayTarget } from "./agent-remote.js";
import { colorFor, painter } from "./color.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface HealthCliOptions {
  url?: string;
  token?: string;
  json?: boolean;
  color?: boolean;
  config?: string;
}

/** "45 s", "3 m 12 s", "2 h 05 m", "3 d 4 h": the two largest units are enough to judge an uptime. */
export function formatUptime(ms: number): string {
  const s = Math.floor(Math.max(0, ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(s % 60).padStart(2, "0")} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${String(m % 60).padStart(2, "0")} m`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

export function formatHealth(url: string, h: HealthResult, color: boolean): string {
  const { green, red } = painter(color);
  const d = h.degraded;
  const state = !d
    ? green("ok")
    : d.reason === "mcp server failed"
      ? red(`degraded: ${d.reason}: ${d.servers.join(", ")} (see loopgate mcp list)`)
      : d.reason === "storage full"
        ? red(`degraded: ${d.reason} (${d.code}) in ${d.stateDir}`)
        : red(`degraded: ${d.reason}: ${d.message}`);
  return [
    `gateway ${url} ${state}`,
    `loopgate ${h.version}`,
    `up ${formatUptime(h.uptimeMs)}`,
    // an older gateway's answer lacks the newer fields; a token limited to some sessions gets no counts
    ...(typeof h.activeRuns === "number" ? [plural(h.activeRuns, "active run")] : []),
    ...(typeof h.queueDepth === "number" ? [plural(h.queueDepth, "queued input")] : []),
    ...(typeof h.sessions === "number" ? [plural(h.sessions, "session")] : []),
    ...((h.stuckSessions ?? 0) > 0 ? [red(plural(h.stuckSessions ?? 0, "stuck session"))] : []),
  ].join(" · ");
}

/** `loopgate health`: asks the running gateway (the `health` RPC) rather than reading local state. */
export async function runHealth(opts: HealthCliOptions): Promise<number> {
  const { url, token } = resolveGatewayTarget(opts);
  const client = await connectGateway(url, token, ["operator.read"]);
  try {
    const health = await client.request<HealthResult>("health", {});
    if (opts.json) process.stdout.write(`${JSON.stringify(health)}\n`);
    else process.stdout.write(`${formatHealth(url, health, colorFor(process.stdout, { flag: opts.color }))}\n`);
    return EXIT.ok;
  } catch (err) {
    throw new CliError(`the gateway at ${url} did not answer health: ${(err as Error).message}`, EXIT.runError);
  } finally {
    await client.close();
  }
}
