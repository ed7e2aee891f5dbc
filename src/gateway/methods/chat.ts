import { chatAbortParamsSchema, chatHistoryParamsSchema, chatSendParamsSchema } from "../../protocol/params.js";
import type { ChatAbortResult, ChatHistoryResult } from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { redactTranscriptRow } from "../../tools/redact-transcript.js";
import { defineMethod } from "../context.js";
import { acceptRun } from "./run-intake.js";
import { requireVisible } from "./sessions.js";

const DEFAULT_HISTORY_LIMIT = 200;

export const chatSendMethod = defineMethod({
  name: "chat.send",
  scope: "write",
  params: chatSendParamsSchema,
  handle({ params, conn, gw, reply }) {
    acceptRun(gw, conn, params, reply);
  },
});

export const chatAbortMethod = defineMethod({
  name: "chat.abort",
  scope: "write",
  params: chatAbortParamsSchema,
  handle({ params, gw, reply }) {
    const key = normalizeSessionKey(params.sessionKey, params.agentId ?? gw.service.rt.defaultAgentId).key;
    // the service aborts queued turns of the session first, then the active run
    const { aborted } = gw.service.abort(key, params.runId);
    const result: ChatAbortResult = { ok: true, aborted: aborted.length > 0, runIds: aborted };
    reply.ok(result);
  },
});

export const chatHistoryMethod = defineMethod({
  name: "chat.history",
  scope: "read",
  params: chatHistoryParamsSchema,
  handle({ params, conn, gw, reply }) {
    const store = gw.service.rt.store;
    const key = normalizeSessionKey(params.sessionKey, params.agentId ?? gw.service.rt.defaultAgentId).key;
    requireVisible(conn, key);
    const session = store.getSession(key);
    if (!session) {
      // a chat UI opening a session that has no messages yet gets an empty history, not an error
      const empty: ChatHistoryResult = { sessionKey: key, generation: 0, messages: [] };
      reply.ok(empty);
      return;
    }
    const limit = params.limit ?? DEFAULT_HISTORY_LIMIT;
    // one row more than asked tells whether older rows exist
    const rows = store
      .readTranscript(key, {
        generation: session.generation,
        limit: limit + 1,
        beforeSeq: params.before,
      })
      .map(redactTranscriptRow);
    const more = rows.length > limit;
    const page = more ? rows.slice(1) : rows;
    const result: ChatHistoryResult = {
      sessionKey: key,
      sessionId: session.sessionId,
      generation: session.generation,
      messages: page.map((r) => ({
        seq: r.seq,
        kind: r.kind,
        createdAt: r.createdAt,
        ...(r.runId !== undefined ? { runId: r.runId } : {}),
        ...(r.message !== undefined ? { message: r.message } : {}),
        ...(r.text !== undefined ? { text: r.text } : {}),
      })),
      ...(more && page.length > 0 ? { nextBefore: page[0].seq } : {}),
    };
    reply.ok(result);
  },
});
