import { configuredAgentIds } from "../../config/agents.js";
import { chatMetadataParamsSchema, chatStartupParamsSchema } from "../../protocol/params.js";
import type { ChatHistoryResult, ChatMetadataResult, ChatStartupResult } from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod } from "../context.js";
import { readHistoryPage } from "../history-page.js";
import { agentIdentity, SETTING_CHOICES } from "./gateway-info.js";
import { listedSession } from "./sessions.js";

/** messages a chat view opens with (it pages further back with chat.history) */
const STARTUP_HISTORY_LIMIT = 50;

/**
 * What OpenClaw's chat views ask for when they open: chat.startup (the agents, the session the view opens on and
 * its latest messages) and chat.metadata (a session's agent identity, model and the setting choices). Both are
 * reads of one session: operator.read inside the token's sessions.
 */
export const chatStartupMethod = defineMethod({
  name: "chat.startup",
  scope: "read",
  params: chatStartupParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const rt = gw.service.rt;
    const agentId = params.agentId ?? rt.defaultAgentId;
    const key = normalizeSessionKey(params.sessionKey, agentId).key;
    conn.access.requireRead(key);
    const session = await gw.service.session(key);
    const history: ChatHistoryResult = session
      ? await gw.historyPages.run(() =>
          readHistoryPage(gw.service.sessions, session, {
            limit: params.limit ?? STARTUP_HISTORY_LIMIT,
            maxBytes: Math.min(params.maxBytes ?? Number.POSITIVE_INFINITY, gw.limits.maxPageBytes),
          }),
        )
      : { sessionKey: key, generation: 0, messages: [] };
    const result: ChatStartupResult = {
      defaultAgentId: rt.defaultAgentId,
      mainKey: normalizeSessionKey(undefined, agentId).key,
      agents: configuredAgentIds(rt.config).map((id) => {
        const name = rt.config.agents.list.find((a) => a.id === id)?.name;
        return name ? { id, name } : { id };
      }),
      ...history,
      ...(session ? { sessionInfo: await listedSession(gw, session, false) } : {}),
    };
    reply.ok(result);
  },
});

export const chatMetadataMethod = defineMethod({
  name: "chat.metadata",
  scope: "read",
  params: chatMetadataParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const rt = gw.service.rt;
    const key =
      params.sessionKey !== undefined
        ? normalizeSessionKey(params.sessionKey, params.agentId ?? rt.defaultAgentId).key
        : undefined;
    conn.access.requireRead(key);
    const session = key !== undefined ? await gw.service.session(key) : undefined;
    const agentId = session?.agentId ?? params.agentId ?? rt.defaultAgentId;
    const model = session?.modelOverride ?? rt.agentModelRef(agentId);
    const result: ChatMetadataResult = {
      agentId,
      ...(key !== undefined ? { sessionKey: key } : {}),
      ...(session ? { session: await listedSession(gw, session, false) } : {}),
      agent: await agentIdentity(gw, agentId),
      ...(model ? { model } : {}),
      ...SETTING_CHOICES,
    };
    reply.ok(result);
  },
});
