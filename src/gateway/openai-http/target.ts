import type http from "node:http";
import { configuredAgentIds, defaultAgentId, isConfiguredAgent, unknownAgentMessage } from "../../config/agents.js";
import type { LoopgateConfig } from "../../config/schema.js";
import { isValidAgentId } from "../../session/keys.js";
import { OpenAiHttpError } from "./errors.js";

/** The model names this API lists and takes: one per agent, `loopgate/<agentId>`. */
export const MODEL_PREFIX = "loopgate/";

type TargetConfig = Pick<LoopgateConfig, "agents">;

/** What a request's model, headers and `user` pick: the agent, its session, and the model the run should use. */
export interface RunTarget {
  /** set when the request named the agent (model or header); otherwise the session key or the default decides */
  agentId?: string;
  sessionKey: string;
  /** an alias of agents.defaults.models the request named as its model: the run uses that model */
  modelAlias?: string;
}

type ModelMeaning = { agentId: string } | { anyAgent: true } | { alias: string } | { unknown: true };

/**
 * What the request's `model` names: an agent (`loopgate/<id>`, OpenClaw's `openclaw/<id>`, `openclaw:<id>`,
 * `agent:<id>`, or a bare configured agent id), any agent (`loopgate`, `openclaw`, `…/default`: the header's, else
 * the default), or an alias of agents.defaults.models (the same agent, answering with that model).
 */
export function modelMeaning(config: TargetConfig, model: string): ModelMeaning {
  const name = model.trim();
  if (name === "loopgate" || name === "openclaw") return { anyAgent: true };
  const m = /^(?:loopgate\/|openclaw\/|openclaw:|agent:)(.+)$/.exec(name);
  if (m) return m[1] === "default" ? { anyAgent: true } : { agentId: m[1] };
  if (isConfiguredAgent(config, name)) return { agentId: name };
  const lower = name.toLowerCase();
  const aliased = Object.entries(config.agents.defaults.models ?? {}).some(
    ([ref, entry]) => entry.alias?.toLowerCase() === lower && !ref.endsWith("/*"),
  );
  return aliased ? { alias: name } : { unknown: true };
}

/** The ids GET /v1/models lists: every agent's model name, then the aliases. */
export function modelIds(config: TargetConfig): string[] {
  const aliases = Object.entries(config.agents.defaults.models ?? {}).flatMap(([ref, e]) =>
    e.alias && !ref.endsWith("/*") ? [e.alias] : [],
  );
  return [...configuredAgentIds(config).map((id) => `${MODEL_PREFIX}${id}`), ...aliases];
}

function header(req: http.IncomingMessage, ...names: string[]): string | undefined {
  for (const name of names) {
    const v = req.headers[name];
    const value = Array.isArray(v) ? v[0] : v;
    if (value !== undefined && value.trim() !== "") return value.trim();
  }
  return undefined;
}

/**
 * The agent and the session of a request. The agent: `x-loopgate-agent-id` / `x-openclaw-agent-id`, else the one the
 * model names, else the session key's, else the default. The session: `x-loopgate-session-key` /
 * `x-openclaw-session-key` (a key as every method takes it), else the session of the response it continues
 * (`continues`: previous_response_id's), else `agent:<agentId>:openai-user:<user>` for the
 * OpenAI `user` field (OpenClaw's stable per-user key), else a fresh `agent:<agentId>:openai:<id>` per request.
 */
export function runTarget(
  req: http.IncomingMessage,
  config: TargetConfig,
  body: { model: string; user?: string; continues?: string },
  newId: () => string,
): RunTarget {
  const named = header(req, "x-loopgate-agent-id", "x-openclaw-agent-id");
  const meaning = modelMeaning(config, body.model);
  if ("unknown" in meaning && named === undefined) {
    throw new OpenAiHttpError(
      404,
      `model "${body.model}" does not exist on this gateway: use one of ${modelIds(config).join(", ")} (GET /v1/models)`,
      { code: "model_not_found", param: "model" },
    );
  }
  if ("agentId" in meaning && named !== undefined && named !== meaning.agentId) {
    throw new OpenAiHttpError(
      400,
      `model "${body.model}" names agent "${meaning.agentId}" but the agent-id header names "${named}": send one, or the same`,
      { code: "agent_conflict", param: "model" },
    );
  }
  const agentId = named ?? ("agentId" in meaning ? meaning.agentId : undefined);
  if (agentId !== undefined && !(isValidAgentId(agentId) && isConfiguredAgent(config, agentId))) {
    throw new OpenAiHttpError(404, unknownAgentMessage(config, agentId), {
      code: "agent_not_found",
      ...(named === undefined ? { param: "model" } : {}),
    });
  }
  const alias = "alias" in meaning ? { modelAlias: meaning.alias } : {};
  const explicitKey = header(req, "x-loopgate-session-key", "x-openclaw-session-key") ?? body.continues;
  if (explicitKey !== undefined)
    return { ...(agentId !== undefined ? { agentId } : {}), sessionKey: explicitKey, ...alias };
  const owner = agentId ?? defaultAgentId(config);
  if (body.user !== undefined) {
    if (/\s/.test(body.user))
      throw new OpenAiHttpError(400, "user: whitespace is not allowed (it names the user's session)", {
        code: "invalid_request",
        param: "user",
      });
    return { agentId: owner, sessionKey: `agent:${owner}:openai-user:${body.user}`, ...alias };
  }
  return { agentId: owner, sessionKey: `agent:${owner}:openai:${newId()}`, ...alias };
}
