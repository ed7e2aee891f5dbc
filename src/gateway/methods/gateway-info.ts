import { RunParamError } from "../../agent/service.js";
import { configuredAgentIds } from "../../config/agents.js";
import { UnknownAuthProfileError } from "../../credentials/index.js";
import { readIdentity } from "../../prompt/identity.js";
import { queueModes, thinkingLevels, verboseLevels } from "../../protocol/enums.js";
import { ErrorCodes } from "../../protocol/frames.js";
import {
  agentIdentityParamsSchema,
  commandsListParamsSchema,
  looseEmptyParamsSchema,
  modelsAuthClearParamsSchema,
  modelsAuthStatusParamsSchema,
  modelsListParamsSchema,
  updateStatusParamsSchema,
} from "../../protocol/params.js";
import type {
  AgentIdentity,
  ConfigGetResult,
  ModelsAuthClearResult,
  ModelsAuthStatusResult,
  StatusResult,
} from "../../protocol/payloads.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";
import { redactConfig } from "../redact-config.js";
import { healthFor } from "./health.js";

/*
 * What OpenClaw's operator clients read about the gateway: its agents, models, status, commands and config. These
 * are gateway-wide reads: operator.read (an operator.write bridge sees only its own runs, SPEC 21).
 */

/** The agent's identity: config name, then its IDENTITY.md (name, emoji, avatar), then its id. */
export async function agentIdentity(gw: GatewayContext, agentId: string): Promise<AgentIdentity> {
  const rt = gw.service.rt;
  const { dir } = await rt.workspaceFor(agentId);
  const file = await readIdentity(dir);
  const configured = rt.config.agents.list.find((a) => a.id === agentId)?.name;
  const name = configured ?? file.name;
  const avatar = file.avatar;
  return {
    agentId,
    name: name ?? agentId,
    nameSource: configured !== undefined ? "config" : file.name !== undefined ? "workspace" : "default",
    ...(file.emoji ? { emoji: file.emoji } : {}),
    ...(avatar
      ? {
          avatar,
          avatarStatus: /^https?:\/\//i.test(avatar) ? "remote" : avatar.startsWith("data:") ? "data" : "local",
        }
      : { avatarStatus: "none" as const }),
  };
}

export const agentsListMethod = defineMethod({
  name: "agents.list",
  scope: "read",
  params: looseEmptyParamsSchema,
  handle({ conn, gw, reply }) {
    conn.access.requireRead(undefined);
    const rt = gw.service.rt;
    const agents = configuredAgentIds(rt.config).map((id) => {
      const entry = rt.config.agents.list.find((a) => a.id === id);
      const primary = rt.agentModelRef(id);
      const fallbacks =
        typeof entry?.model === "object" ? entry.model.fallbacks : rt.config.agents.defaults.model.fallbacks;
      return {
        id,
        kind: "agent" as const,
        ...(entry?.name ? { name: entry.name } : {}),
        ...(primary ? { model: { primary, ...(fallbacks.length ? { fallbacks } : {}) } } : {}),
        thinkingOptions: [...thinkingLevels],
        thinkingDefault: rt.config.agents.defaults.thinkingDefault,
      };
    });
    reply.ok({ defaultId: rt.defaultAgentId, mainKey: "main", scope: "per-sender", agents });
  },
});

export const agentIdentityGetMethod = defineMethod({
  name: "agent.identity.get",
  scope: "read",
  params: agentIdentityParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const rt = gw.service.rt;
    let agentId = params.agentId;
    if (agentId === undefined && params.sessionKey) {
      const key = normalizeSessionKey(params.sessionKey, rt.defaultAgentId).key;
      conn.access.requireRead(key);
      agentId = (await gw.service.session(key))?.agentId;
    } else conn.access.requireRead(undefined);
    reply.ok(await agentIdentity(gw, agentId ?? rt.defaultAgentId));
  },
});

/** Every model the config names: the providers' model lists, and the agents' models that are not in them. */
export const modelsListMethod = defineMethod({
  name: "models.list",
  scope: "read",
  params: modelsListParamsSchema,
  handle({ conn, gw, reply }) {
    conn.access.requireRead(undefined);
    const rt = gw.service.rt;
    const models: Array<Record<string, unknown>> = [];
    const seen = new Set<string>();
    for (const [provider, cfg] of Object.entries(rt.config.models.providers)) {
      for (const m of cfg.models) {
        seen.add(`${provider}/${m.id}`);
        models.push({
          id: m.id,
          name: m.name ?? m.id,
          provider,
          contextWindow: m.contextWindow,
          ...(m.reasoning !== undefined ? { reasoning: m.reasoning } : {}),
          supportsTools: true,
        });
      }
    }
    for (const agentId of configuredAgentIds(rt.config)) {
      const ref = rt.agentModelRef(agentId);
      if (!ref || seen.has(ref)) continue;
      seen.add(ref);
      const [provider, ...rest] = ref.split("/");
      models.push({ id: rest.join("/"), name: rest.join("/"), provider, supportsTools: true });
    }
    reply.ok({ models });
  },
});

/** Per provider: is a key configured, and where from; per auth profile, its health (SPEC 23). Never a key. */
export const modelsAuthStatusMethod = defineMethod({
  name: "models.authStatus",
  scope: "read",
  params: modelsAuthStatusParamsSchema,
  async handle({ conn, gw, reply }) {
    conn.access.requireRead(undefined);
    const rt = gw.service.rt;
    const providers = Object.entries(rt.config.models.providers).map(([provider, cfg]) => {
      const ref = cfg.apiKey?.match(/^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/)?.[1];
      const source: "config" | "env" | "none" =
        ref !== undefined ? (rt.env[ref] ? "env" : "none") : cfg.apiKey ? "config" : "none";
      // a scripted provider and a local endpoint need no key
      const configured = source !== "none" || cfg.api === "scripted" || (cfg.apiKey === undefined && !!cfg.baseUrl);
      return { provider, api: cfg.api, configured, source };
    });
    const result: ModelsAuthStatusResult = { providers, profiles: await rt.authProfiles.status() };
    reply.ok(result);
  },
});

/**
 * models.authClear (Loopgate's own): ends an auth profile's cooldowns and disable, on every node (the health is in
 * the shared store). An operator's act: admin scope.
 */
export const modelsAuthClearMethod = defineMethod({
  name: "models.authClear",
  scope: "admin",
  params: modelsAuthClearParamsSchema,
  async handle({ params, conn, gw, reply }) {
    // the keys serve every session: a token limited to some sessions may not change them for all
    if (!conn.access.seesAllSessions) {
      throw new GatewayError({
        code: ErrorCodes.forbidden,
        message: "models.authClear changes every session's keys: it needs a token that grants all sessions",
      });
    }
    const profiles = gw.service.rt.authProfiles;
    if (!profiles.has(params.id)) {
      throw new RunParamError(
        "id",
        new UnknownAuthProfileError(
          params.id,
          profiles.list.map((p) => p.id),
        ).message,
      );
    }
    const { cleared } = await profiles.clear(params.id);
    gw.service.rt.logger.info("auth profile cleared", { profile: params.id, cleared });
    const result: ModelsAuthClearResult = { ok: true, id: params.id, cleared };
    reply.ok(result);
  },
});

export const statusMethod = defineMethod({
  name: "status",
  scope: "read",
  params: looseEmptyParamsSchema,
  async handle({ conn, gw, reply }) {
    conn.access.requireRead(undefined);
    // the same view as health: a token limited to some sessions gets no gateway-wide counts, only its cron jobs
    const h = await healthFor(conn, gw);
    const result: StatusResult = {
      ok: h.ok,
      version: h.version,
      uptimeMs: h.uptimeMs,
      ...(h.activeRuns !== undefined ? { activeRuns: h.activeRuns } : {}),
      ...(h.sessions !== undefined ? { sessions: h.sessions } : {}),
      defaultAgentId: gw.service.rt.defaultAgentId,
      agents: configuredAgentIds(gw.service.rt.config),
      ...(h.cron ? { cron: h.cron } : {}),
    };
    reply.ok(result);
  },
});

/** Loopgate is updated with npm, not by the gateway: there is no update channel to report on. */
export const updateStatusMethod = defineMethod({
  name: "update.status",
  scope: "admin",
  params: updateStatusParamsSchema,
  handle({ gw, reply }) {
    reply.ok({
      sentinel: { kind: "none", reason: "no update channel: update Loopgate with npm", version: gw.version },
      updateAvailable: null,
    });
  },
});

/** The slash commands Loopgate understands (agent/run/commands.ts), as OpenClaw's CommandEntry. */
const COMMANDS = [
  { name: "new", description: "Start a new session (the old transcript is kept); text after it is sent there" },
  { name: "reset", description: "Start a new session, like /new" },
  { name: "stop", description: "Stop the running turn and drop the queued messages" },
  { name: "compact", description: "Summarize the history now; text after it guides the summary" },
] as const;

export const commandsListMethod = defineMethod({
  name: "commands.list",
  scope: "read",
  params: commandsListParamsSchema,
  handle({ params, conn, reply }) {
    conn.access.requireRead(undefined);
    // slash commands are typed into the chat: text scope only
    const commands =
      params.scope === "native"
        ? []
        : COMMANDS.map((c) => ({
            name: c.name,
            description: c.description,
            textAliases: [`/${c.name}`],
            category: "session" as const,
            source: "native" as const,
            scope: "text" as const,
            acceptsArgs: c.name !== "stop",
          }));
    reply.ok({ commands });
  },
});

/**
 * The effective config with every secret replaced (redact-config.ts); an operator's view of the whole gateway. With
 * the config file's path and the hash of its content now: config.patch's base hash (SPEC 26).
 */
export const configGetMethod = defineMethod({
  name: "config.get",
  scope: "admin",
  params: looseEmptyParamsSchema,
  handle({ gw, reply }) {
    const { config, redacted } = redactConfig(gw.service.rt.config);
    const file = gw.configFile;
    const hash = file?.currentHash();
    const result: ConfigGetResult = {
      config,
      redacted,
      ...(file ? { path: file.file, exists: file.exists() } : {}),
      ...(hash !== undefined ? { hash } : {}),
    };
    reply.ok(result);
  },
});

/** The setting choices a chat view offers (chat.metadata) */
export const SETTING_CHOICES = {
  thinkingLevels: [...thinkingLevels],
  verboseLevels: [...verboseLevels],
  queueModes: [...queueModes],
};
