import { chatAbortParamsSchema, chatHistoryParamsSchema, chatSendParamsSchema } from "../../protocol/params.js";
import type { ChatAbortResult, ChatHistoryResult } from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod } from "../context.js";
import { readHistoryPage } from "../history-page.js";
import { acceptRun } from "./run-intake.js";

const DEFAULT_HISTORY_LIMIT = 200;

export const chatSendMethod = defineMethod({
  name: "chat.send",
  scope: "write",
  params: chatSendParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const { timeoutMs, ...request } = params;
    const timeout = timeoutMs !== undefined ? Math.ceil(timeoutMs / 1000) : undefined;
    await acceptRun(gw, conn, timeout !== undefined ? { ...request, timeout } : request, reply);
  },
});

export const chatAbortMethod = defineMethod({
  name: "chat.abort",
  scope: "write",
  params: chatAbortParamsSchema,
  handle({ params, conn, gw, reply }) {
    const key = normalizeSessionKey(params.sessionKey, params.agentId ?? gw.service.rt.defaultAgentId).key;
    const mayAbort = conn.access.abortable(key, params.runId);
    // the service aborts queued turns of the session first, then the active run
    const aborted =
      mayAbort === "all"
        ? gw.service.abort(key, params.runId).aborted
        : mayAbort.flatMap((runId) => gw.service.abort(key, runId).aborted);
    const result: ChatAbortResult = { ok: true, aborted: aborted.length > 0, runIds: aborted };
    reply.ok(result);
  },
});

export const chatHistoryMethod = defineMethod({
  name: "chat.history",
  scope: "read",
  params: chatHistoryParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const sessions = gw.service.sessions;
    const key = normalizeSessionKey(params.sessionKey, params.agentId ?? gw.service.rt.defaultAgentId).key;
    conn.access.requireRead(key);
    // a chat view: the session's runs reach this connection live wherever they execute
    gw.broadcaster.viewChat(conn, key);
    const session = await sessions.get(key);
    if (!session) {
      // a chat UI opening a session that has no messages yet gets an empty history, not an error
      const empty: ChatHistoryResult = { sessionKey: key, generation: 0, messages: [] };
      reply.ok(empty);
      return;
    }
    // the page is sent before the next one is built, so two big pages are never serialized in one turn
    await gw.historyPages.run(async () => {
      const result = await readHistoryPage(sessions, session, {
        limit: params.limit ?? DEFAULT_HISTORY_LIMIT,
        cursor: params.cursor,
        before: params.before,
        generation: params.generation,
        maxBytes: Math.min(params.maxBytes ?? Number.POSITIVE_INFINITY, gw.limits.maxPageBytes),
      });
      reply.ok(result);
    });
  },
});
