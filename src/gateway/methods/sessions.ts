import type { SessionRecord } from "../../agent/session-service.js";
import { ErrorCodes } from "../../protocol/frames.js";
import {
  sessionsDeleteParamsSchema,
  sessionsGetParamsSchema,
  sessionsListParamsSchema,
  sessionsResetParamsSchema,
} from "../../protocol/params.js";
import type {
  SessionInfo,
  SessionsDeleteResult,
  SessionsGetResult,
  SessionsListResult,
  SessionsResetResult,
} from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";
import { readSessionsPage } from "../sessions-page.js";

/** sessions per page when the caller gives no limit (the byte budget may stop a page sooner) */
const DEFAULT_LIST_LIMIT = 1000;

export function sessionInfo(s: SessionRecord): SessionInfo {
  return {
    key: s.key,
    sessionId: s.sessionId,
    agentId: s.agentId,
    generation: s.generation,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    ...(s.label !== undefined ? { label: s.label } : {}),
    ...(s.modelOverride !== undefined ? { model: s.modelOverride } : {}),
    ...(s.thinking !== undefined ? { thinking: s.thinking } : {}),
    ...(s.queueMode !== undefined ? { queueMode: s.queueMode } : {}),
    inputTokens: s.inputTokens,
    outputTokens: s.outputTokens,
    totalTokens: s.totalTokens,
    compactionCount: s.compactionCount,
  };
}

function targetKey(gw: GatewayContext, params: { sessionKey?: string; key?: string; agentId?: string }): string {
  return normalizeSessionKey(params.sessionKey ?? params.key, params.agentId ?? gw.service.rt.defaultAgentId).key;
}

async function requireSession(gw: GatewayContext, key: string): Promise<SessionRecord> {
  const s = await gw.service.sessions.get(key);
  if (!s) throw new GatewayError({ code: ErrorCodes.notFound, message: `params.sessionKey: no session "${key}"` });
  return s;
}

/** Resetting or deleting under a running turn would split its transcript: the caller aborts or waits first. */
function refuseWhileRunning(gw: GatewayContext, key: string, what: string): void {
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
    const result: SessionsListResult = await readSessionsPage(gw.service.sessions, {
      limit: params.limit ?? DEFAULT_LIST_LIMIT,
      agentId: params.agentId,
      cursor: params.cursor,
      maxBytes: gw.limits.maxPageBytes,
      canSee: (key) => conn.access.canSeeSession(key),
      info: sessionInfo,
    });
    reply.ok(result);
  },
});

export const sessionsGetMethod = defineMethod({
  name: "sessions.get",
  scope: "read",
  params: sessionsGetParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const key = targetKey(gw, params);
    conn.access.requireRead(key);
    const result: SessionsGetResult = { session: sessionInfo(await requireSession(gw, key)) };
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
    // a new transcript generation; the old rows stay (SPEC 4); under the session lock, like a run
    const generation = await gw.service.sessions.reset(key, gw.now(), `sessions.reset (${params.reason ?? "reset"})`);
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
    const deleted = await gw.service.sessions.delete(key);
    const result: SessionsDeleteResult = { ok: true, key, deleted, archived: [] };
    reply.ok(result);
  },
});
