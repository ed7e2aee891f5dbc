import { randomUUID } from "node:crypto";
import type { SessionRecord } from "../../agent/session-service.js";
import { ErrorCodes, type ErrorShape } from "../../protocol/frames.js";
import {
  sessionsCreateParamsSchema,
  sessionsDescribeParamsSchema,
  sessionsPatchParamsSchema,
  sessionsResolveParamsSchema,
} from "../../protocol/params.js";
import type { SessionsDescribeResult, SessionsPatchResult } from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod, type GatewayContext, type Reply } from "../context.js";
import { GatewayError, toErrorShape } from "../errors.js";
import { titleOf } from "../session-info.js";
import { acceptRun } from "./run-intake.js";
import { listedSession, requireSession } from "./sessions.js";

/** How many sessions sessions.resolve looks through for a label. */
const LABEL_SCAN = 1000;

function keyOf(gw: GatewayContext, key: string, agentId: string | undefined): string {
  return normalizeSessionKey(key, agentId ?? gw.service.rt.defaultAgentId).key;
}

/**
 * OpenClaw's sessions.create: a session (under the given key, or a new one), with its label, model and thinking
 * level; with `message`, its first run starts at once (the same intake as chat.send). operator.write inside the
 * token's sessions, as sending is.
 */
export const sessionsCreateMethod = defineMethod({
  name: "sessions.create",
  scope: "write",
  params: sessionsCreateParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const agentId = params.agentId ?? gw.service.rt.defaultAgentId;
    const key = keyOf(gw, params.key ?? `s-${randomUUID().slice(0, 8)}`, agentId);
    conn.access.requireSend(key);
    await gw.service.createSession(key, agentId);
    if (params.label !== undefined || params.model !== undefined || params.thinkingLevel !== undefined) {
      await gw.service.patchSession(key, { label: params.label, model: params.model, thinking: params.thinkingLevel });
    }
    let run: { runId?: string; error?: ErrorShape } = {};
    if (params.message) {
      // the run's own answer goes into this method's result, not out as a second response
      const capture: Reply = { ok: () => {}, error: (error) => (run = { error }) };
      try {
        const accepted = await acceptRun(
          gw,
          conn,
          {
            sessionKey: key,
            message: params.message,
            idempotencyKey: params.idempotencyKey ?? randomUUID(),
            ...(params.attachments ? { attachments: params.attachments } : {}),
          },
          capture,
        );
        run = { runId: accepted.runId };
      } catch (err) {
        run = { error: toErrorShape(err, gw.isTransientStoreError) };
      }
    }
    const session = await requireSession(gw, key);
    reply.ok({
      ok: true,
      key,
      sessionId: session.sessionId,
      entry: await listedSession(gw, session, false),
      ...(params.message ? { runStarted: run.runId !== undefined } : {}),
      ...(run.runId ? { runId: run.runId } : {}),
      ...(run.error ? { runError: { code: run.error.code, message: run.error.message } } : {}),
    });
  },
});

/** OpenClaw's sessions.resolve: the session a key, stored session id or label names (read scope, granted only). */
export const sessionsResolveMethod = defineMethod({
  name: "sessions.resolve",
  scope: "read",
  params: sessionsResolveParamsSchema,
  async handle({ params, conn, gw, reply }) {
    conn.access.requireRead(undefined);
    let found: SessionRecord | undefined;
    if (params.spawnedBy === undefined) {
      if (params.key !== undefined) found = await gw.service.session(keyOf(gw, params.key, params.agentId));
      else if (params.sessionId !== undefined) found = await gw.service.sessionById(params.sessionId);
      else if (params.label !== undefined) {
        found = (await gw.service.sessions.listSessions({ limit: LABEL_SCAN, agentId: params.agentId })).find(
          (s) => s.label === params.label && conn.access.canSeeSession(s.key),
        );
      }
    }
    if (found && params.includeGlobal === false && found.key === "global") found = undefined;
    if (found && !conn.access.canSeeSession(found.key)) found = undefined;
    if (!found) {
      if (params.allowMissing) {
        reply.ok({ ok: false, candidates: [] });
        return;
      }
      throw new GatewayError({
        code: ErrorCodes.notFound,
        message: `no session matches ${params.key !== undefined ? `params.key "${params.key}"` : params.sessionId !== undefined ? `params.sessionId "${params.sessionId}"` : params.label !== undefined ? `params.label "${params.label}"` : "(name params.key, params.sessionId or params.label)"}`,
      });
    }
    reply.ok({
      ok: true,
      key: found.key,
      agentId: found.agentId,
      ...(found.label !== undefined ? { displayName: found.label } : {}),
    });
  },
});

/** OpenClaw's sessions.describe: one session's row, with its title and last message when asked for. */
export const sessionsDescribeMethod = defineMethod({
  name: "sessions.describe",
  scope: "read",
  params: sessionsDescribeParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const key = keyOf(gw, params.key, undefined);
    conn.access.requireRead(key);
    const session = await requireSession(gw, key);
    const last = params.includeLastMessage ? await gw.service.lastMessageText(session) : undefined;
    const preview = last !== undefined ? titleOf(last) : undefined;
    const result: SessionsDescribeResult = {
      ok: true,
      key,
      session: await listedSession(gw, session, params.includeDerivedTitles === true),
      ...(preview !== undefined ? { lastMessagePreview: preview } : {}),
    };
    reply.ok(result);
  },
});

/**
 * OpenClaw's sessions.patch: the session's model, thinking, reasoning and verbose levels, queue mode and label. The
 * session's next runs use them (a run already going keeps what it started with); `null` clears one. Changing a
 * session's settings is an operator's act (SPEC 21: operator.admin).
 */
export const sessionsPatchMethod = defineMethod({
  name: "sessions.patch",
  scope: "admin",
  params: sessionsPatchParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const key = keyOf(gw, params.key, params.agentId);
    conn.access.requireAdmin(key);
    await requireSession(gw, key);
    const patched = await gw.service.patchSession(key, {
      label: params.label,
      model: params.model,
      thinking: params.thinkingLevel,
      verboseLevel: params.verboseLevel,
      reasoningLevel: params.reasoningLevel,
      queueMode: params.queueMode,
      authProfile: params.authProfile,
    });
    const result: SessionsPatchResult = {
      ok: true,
      key,
      session: await listedSession(gw, patched ?? (await requireSession(gw, key)), false),
    };
    reply.ok(result);
  },
});
