import { CronJobError } from "../../cron/scheduler.js";
import { ErrorCodes } from "../../protocol/frames.js";
import { type CronRunsResult, cronRunsParamsSchema, cronUpdateParamsSchema } from "../../protocol/operator.js";
import {
  cronAddParamsSchema,
  cronListParamsSchema,
  cronRemoveParamsSchema,
  cronRunParamsSchema,
} from "../../protocol/params.js";
import type { CronAddResult, CronListResult, CronRemoveResult, CronRunResult } from "../../protocol/payloads.js";
import { type CallerConnection, defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";

/*
 * cron.* (SPEC 17). Scopes follow OpenClaw's schema: listing is a read (operator.read sees every job and its run
 * history, as it sees every run); adding, removing and running a job now are admin, because a job runs as the
 * gateway with no client behind it, in sessions no token grant names.
 */

function scheduler(gw: GatewayContext) {
  return gw.cron;
}

/** The scheduler's refusals as gateway errors; CRON_JOB_NOT_FOUND is OpenClaw's detail code. */
async function call<T>(fn: () => T | Promise<T>, jobId?: string): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof CronJobError)) throw err;
    const code =
      err.code === "not_found"
        ? ErrorCodes.notFound
        : err.code === "conflict"
          ? ErrorCodes.conflict
          : err.code === "unavailable"
            ? ErrorCodes.unavailable
            : ErrorCodes.invalidParams;
    throw new GatewayError({
      code,
      message: err.message,
      ...(err.code === "not_found" && jobId ? { details: { code: "CRON_JOB_NOT_FOUND", jobId } } : {}),
    });
  }
}

/** A job is changed or run only by a client whose token grants the session it runs in. */
function requireJobSession(conn: CallerConnection, gw: GatewayContext, id: string): void {
  const key = scheduler(gw).sessionKeyOf(id);
  if (key !== undefined) conn.access.requireAdmin(key);
}

export const cronListMethod = defineMethod({
  name: "cron.list",
  scope: "read",
  params: cronListParamsSchema,
  async handle({ params, conn, gw, reply }) {
    conn.access.requireRead(undefined);
    const cron = scheduler(gw);
    // a token confined to some sessions sees the jobs that run in them
    const jobs = (await cron.list(params.runs ?? 10)).filter((j) => conn.access.canSeeSession(j.sessionKey));
    const result: CronListResult = { enabled: cron.enabled, jobs };
    reply.ok(result);
  },
});

export const cronAddMethod = defineMethod({
  name: "cron.add",
  scope: "admin",
  params: cronAddParamsSchema,
  async handle({ params, conn, gw, reply }) {
    conn.access.requireAdmin(await call(() => scheduler(gw).sessionKeyFor(params)));
    const result: CronAddResult = { job: await call(() => scheduler(gw).add(params)) };
    reply.ok(result);
  },
});

export const cronRemoveMethod = defineMethod({
  name: "cron.remove",
  scope: "admin",
  params: cronRemoveParamsSchema,
  async handle({ params, conn, gw, reply }) {
    requireJobSession(conn, gw, params.id);
    const removed = await call(() => scheduler(gw).remove(params.id), params.id);
    const result: CronRemoveResult = { ok: true, id: params.id, removed };
    reply.ok(result);
  },
});

export const cronRunMethod = defineMethod({
  name: "cron.run",
  scope: "admin",
  params: cronRunParamsSchema,
  async handle({ params, conn, gw, reply }) {
    requireJobSession(conn, gw, params.id);
    const { runId } = await call(() => scheduler(gw).runNow(params.id), params.id);
    const result: CronRunResult = { ok: true, id: params.id, runId };
    reply.ok(result);
  },
});

/** cron.update (OpenClaw's name): switches a job on or off (`patch.enabled`); admin, inside the token's sessions. */
export const cronUpdateMethod = defineMethod({
  name: "cron.update",
  scope: "admin",
  params: cronUpdateParamsSchema,
  async handle({ params, conn, gw, reply }) {
    requireJobSession(conn, gw, params.id);
    const job = await call(() => scheduler(gw).setEnabled(params.id, params.patch.enabled), params.id);
    const result: CronAddResult = { job };
    reply.ok(result);
  },
});

/** cron.runs (OpenClaw's name): one job's run history, newest first; a read, inside the token's sessions. */
export const cronRunsMethod = defineMethod({
  name: "cron.runs",
  scope: "read",
  params: cronRunsParamsSchema,
  async handle({ params, conn, gw, reply }) {
    conn.access.requireRead(undefined);
    const key = scheduler(gw).sessionKeyOf(params.id);
    // a job in a session this token does not grant is answered as no job at all
    if (key !== undefined && !conn.access.canSeeSession(key)) {
      throw new GatewayError({
        code: ErrorCodes.notFound,
        message: `params.id: no cron job "${params.id}"`,
        details: { code: "CRON_JOB_NOT_FOUND", jobId: params.id },
      });
    }
    const entries = await call(() => scheduler(gw).runs(params.id, params.limit ?? 50), params.id);
    const result: CronRunsResult = { id: params.id, entries };
    reply.ok(result);
  },
});
