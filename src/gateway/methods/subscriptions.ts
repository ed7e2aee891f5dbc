import { ErrorCodes } from "../../protocol/frames.js";
import {
  emptyParamsSchema,
  sessionsMessagesSubscribeParamsSchema,
  sessionsObserverVisibilityParamsSchema,
} from "../../protocol/params.js";
import type { SubscribeResult } from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod } from "../context.js";
import { GatewayError } from "../errors.js";

/*
 * What OpenClaw's operator clients follow (SPEC 21: operator.read inside the token's sessions). `sessions.changed`
 * goes to a subscribed connection for each session it may see; `session.message` for the sessions it follows.
 * Subscriptions end with the connection.
 */

export const sessionsSubscribeMethod = defineMethod({
  name: "sessions.subscribe",
  scope: "read",
  params: emptyParamsSchema,
  handle({ conn, gw, reply }) {
    conn.access.requireRead(undefined);
    gw.broadcaster.followSessions(conn, true);
    const result: SubscribeResult = { ok: true, subscribed: true };
    reply.ok(result);
  },
});

export const sessionsUnsubscribeMethod = defineMethod({
  name: "sessions.unsubscribe",
  scope: "read",
  params: emptyParamsSchema,
  handle({ conn, gw, reply }) {
    gw.broadcaster.followSessions(conn, false);
    const result: SubscribeResult = { ok: true, subscribed: false };
    reply.ok(result);
  },
});

export const sessionsMessagesSubscribeMethod = defineMethod({
  name: "sessions.messages.subscribe",
  scope: "read",
  params: sessionsMessagesSubscribeParamsSchema,
  handle({ params, conn, gw, reply }) {
    const key = normalizeSessionKey(params.key, params.agentId ?? gw.service.rt.defaultAgentId).key;
    conn.access.requireRead(key);
    // each followed session costs a little memory for as long as the connection lives: a client may not follow
    // hundreds of thousands (issue 25: 200k keys held 268 MB)
    const limit = gw.limits.maxMessageSubscriptionsPerConnection;
    const now = gw.broadcaster.messageFollowing(conn, key);
    if (!now.following && now.count >= limit) {
      throw new GatewayError({
        code: ErrorCodes.invalidRequest,
        message: `params.key: this connection already follows ${now.count} sessions (gateway.maxMessageSubscriptionsPerConnection is ${limit}); unsubscribe from one first`,
        details: { limit },
      });
    }
    gw.broadcaster.followMessages(conn, key, true);
    const result: SubscribeResult = { ok: true, key, subscribed: true };
    reply.ok(result);
  },
});

export const sessionsMessagesUnsubscribeMethod = defineMethod({
  name: "sessions.messages.unsubscribe",
  scope: "read",
  params: sessionsMessagesSubscribeParamsSchema,
  handle({ params, conn, gw, reply }) {
    const key = normalizeSessionKey(params.key, params.agentId ?? gw.service.rt.defaultAgentId).key;
    gw.broadcaster.followMessages(conn, key, false);
    const result: SubscribeResult = { ok: true, key, subscribed: false };
    reply.ok(result);
  },
});

/** Accepted so the Control UI's observer panel works; Loopgate runs no observer whose work it could pause. */
export const sessionsObserverVisibilityMethod = defineMethod({
  name: "sessions.observer.visibility",
  scope: "read",
  params: sessionsObserverVisibilityParamsSchema,
  handle({ reply }) {
    reply.ok({ ok: true });
  },
});
