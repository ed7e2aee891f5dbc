import type { SessionRecord } from "../../agent/session-service.js";
import { configuredAgentIds } from "../../config/agents.js";
import { ErrorCodes } from "../../protocol/frames.js";
import {
  sessionsDeleteParamsSchema,
  sessionsGetParamsSchema,
  sessionsListParamsSchema,
  sessionsResetParamsSchema,
} from "../../protocol/params.js";
import type {
  SessionActivity,
  SessionListDefaults,
  SessionsDeleteResult,
  SessionsGetResult,
  SessionsListResult,
  SessionsResetResult,
} from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";
import { sessionInfo, titleOf } from "../session-info.js";
import { readSessionsPage } from "../sessions-page.js";

/** sessions per page when the caller gives no limit (the byte budget may stop a page sooner) */
const DEFAULT_LIST_LIMIT = 1000;

/** What the session is doing now, from the service's queue (memory: idle sessions are not held there). */
function activityOf(gw: GatewayContext, key: string): SessionActivity {
  const { activeRunId, queued } = gw.service.sessionActivity(key);
  const state = activeRunId ? "running" : queued > 0 ? "queued" : "idle";
  return { state, ...(activeRunId ? { activeRunId } : {}), queued };
}

export function targetKey(gw: GatewayContext, params: { sessionKey?: string; key?: string; agentId?: string }): string {
  return normalizeSessionKey(params.sessionKey ?? params.key, params.agentId ?? gw.service.rt.defaultAgentId).key;
}

export async function requireSession(gw: GatewayContext, key: string): Promise<SessionRecord> {
  const s = await gw.service.session(key);
  if (!s) throw new GatewayError({ code: ErrorCodes.notFound, message: `params.sessionKey: no session "${key}"` });
  return s;
}

/** Resetting or deleting under a running turn would split its transcript: the caller aborts or waits first. */
export function refuseWhileRunning(gw: GatewayContext, key: string, what: string): void {
  // The service knows the session's turns even when they were started before this gateway attached to it.
  const running = [...new Set([...gw.service.activeRuns(key), ...gw.broadcaster.activeRuns(key)])];
  if (running.length > 0) {
    throw new GatewayError({
      code: ErrorCodes.conflict,
      message: `cannot ${what} session "${key}" while run ${running[0]} is in progress: abort it (chat.abort) or retry when it ends`,
      retryable: true,
      details: { runIds: running },
    });
  }
}

export const sessionsListMethod = defineMethod({
  name: "sessions.list",
  scope: "read",
  params: sessionsListParamsSchema,
  async handle({ params, conn, gw, reply }) {
    conn.access.requireRead(undefined);
    const configured = params.configuredAgentsOnly ? new Set(configuredAgentIds(gw.service.rt.config)) : undefined;
    const result: SessionsListResult = await readSessionsPage(gw.service.sessions, {
      limit: params.limit ?? DEFAULT_LIST_LIMIT,
      agentId: params.agentId,
      cursor: params.cursor,
      maxBytes: gw.limits.maxPageBytes,
      canSee: (key, s) =>
        conn.access.canSeeSession(key) &&
        // Loopgate spawns no sessions: a spawnedBy filter matches none
        params.spawnedBy === undefined &&
        !(params.includeGlobal === false && key === "global") &&
        (configured === undefined || configured.has(s.agentId)),
      info: (s) => listedSession(gw, s, params.includeDerivedTitles === true),
    });
    reply.ok({ ...result, defaults: sessionListDefaults(gw) });
  },
});

/** The default agent's model, as the list's `defaults`; nulls when none is configured or it does not resolve. */
function sessionListDefaults(gw: GatewayContext): SessionListDefaults {
  const rt = gw.service.rt;
  try {
    const m = rt.resolveModel(rt.agentModelRef(rt.defaultAgentId));
    return { modelProvider: m.providerId, model: m.modelId, contextTokens: m.model.contextWindow };
  } catch {
    return { modelProvider: null, model: null, contextTokens: null };
  }
}

/** A listed session: whether a run of it is in progress, and its title when the client asked for titles. */
export async function listedSession(gw: GatewayContext, s: SessionRecord, withTitle: boolean) {
  const first = withTitle ? await gw.service.firstUserText(s) : undefined;
  const info = sessionInfo(s, {
    running: gw.service.activeRuns(s.key).length > 0,
    derivedTitle: first !== undefined ? titleOf(first) : undefined,
  });
  // the console's idle / running / queued N; where its exec runs when that is a sandbox (absent: on the host, so a
  // gateway without sandboxes lists the rows it always did)
  const sandbox = gw.service.rt.sandboxes.describeSession(s.agentId, s.key);
  return { ...info, activity: activityOf(gw, s.key), ...(sandbox ? { sandbox } : {}) };
}

export const sessionsGetMethod = defineMethod({
  name: "sessions.get",
  scope: "read",
  params: sessionsGetParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const key = targetKey(gw, params);
    conn.access.requireRead(key);
    const result: SessionsGetResult = { session: await listedSession(gw, await requireSession(gw, key), false) };
    reply.ok(result);
  },
});

export const sessionsResetMethod = defineMethod({
  name: "sessions.reset",
  scope: "admin",
  params: sessionsResetParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const key = targetKey(gw, params);
    conn.access.requireAdmin(key);
    await requireSession(gw, key);
    refuseWhileRunning(gw, key, "reset");
    // a new transcript generation; the old rows stay (SPEC 4). As /new or /reset typed in the session: the session
    // lock, command:<reason>, session_end and session_start, the sessions.changed notice (session/lifecycle.ts)
    const reason = params.reason ?? "reset";
    const { generation } = await gw.service.sessions.reset(key, {
      reason,
      marker: `sessions.reset (${reason})`,
      command: { args: "", source: "gateway:sessions.reset" },
    });
    const result: SessionsResetResult = { ok: true, key, generation };
    reply.ok(result);
  },
});

export const sessionsDeleteMethod = defineMethod({
  name: "sessions.delete",
  scope: "admin",
  params: sessionsDeleteParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const key = targetKey(gw, params);
    conn.access.requireAdmin(key);
    refuseWhileRunning(gw, key, "delete");
    // session_end and the sessions.changed notice come from the lifecycle, unless the caller turned hooks off
    const deleted = await gw.service.sessions.delete(key, { emitLifecycleHooks: params.emitLifecycleHooks });
    const result: SessionsDeleteResult = { ok: true, key, deleted, archived: [] };
    reply.ok(result);
  },
});
