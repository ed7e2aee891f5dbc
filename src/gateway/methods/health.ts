import { healthParamsSchema } from "../../protocol/params.js";
import type { CronHealth, HealthResult } from "../../protocol/payloads.js";
import { type CallerConnection, defineMethod, type GatewayContext } from "../context.js";

export const healthMethod = defineMethod({
  name: "health",
  scope: "read",
  params: healthParamsSchema,
  async handle({ conn, gw, reply }) {
    reply.ok(await healthFor(conn, gw));
  },
});

/**
 * The gateway's health as this client may see it (SPEC 21). A token limited to some sessions is one tenant's: the
 * gateway-wide counts (runs, sessions, queue, stuck sessions, the audit queue) would tell it about the others, so
 * they are left out, and cron shows only its sessions' jobs, as `cron.list` does.
 */
export async function healthFor(conn: CallerConnection, gw: GatewayContext): Promise<HealthResult> {
  const h = await gw.health();
  if (conn.access.seesAllSessions) return h;
  const { activeRuns: _r, sessions: _s, audit: _a, queueDepth: _q, stuckSessions: _st, cron, ...rest } = h;
  return { ...rest, ...(cron ? { cron: await visibleCron(conn, gw, cron) } : {}) };
}

/** `health.cron` narrowed to the jobs whose sessions this client may see. */
export async function visibleCron(conn: CallerConnection, gw: GatewayContext, cron: CronHealth): Promise<CronHealth> {
  const visible = new Set(
    (await gw.cron.list(0)).filter((j) => conn.access.canSeeSession(j.sessionKey)).map((j) => j.id),
  );
  return { jobs: visible.size, last: cron.last.filter((l) => visible.has(l.jobId)) };
}
