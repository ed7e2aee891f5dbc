import fs from "node:fs";
import { authProfileProblems } from "../credentials/profiles.js";
import { isPrivateNetworkBaseUrl } from "../providers/loopback.js";
import { postgresUrlFrom } from "../storage/postgres/postgres-url.js";
import { ConfigError } from "./errors.js";
import type { LoopgateConfig } from "./schema.js";
import { finishConfig } from "./source.js";

/*
 * Problems the schema cannot see but loading can: they would otherwise surface mid-run, long after the file was
 * written. Runs on the finished config (paths resolved against the file, env-only providers added), so it sees
 * exactly what a run would. Zod-free, so the cached CLI path runs it on every load.
 */

export function checkConfig(config: LoopgateConfig, env: NodeJS.ProcessEnv): string[] {
  return [
    ...providerProblems(config, env),
    ...agentProblems(config),
    ...diagnosticsProblems(config),
    ...metricsProblems(config),
    ...storageProblems(config, env),
    ...mcpProblems(config, env),
    ...authProfileProblems(config, env),
  ];
}

/**
 * An MCP server whose header or env names an unset variable would fail at every connect; an agent naming a server
 * that does not exist would silently get none of its tools. Both are said at load.
 */
function mcpProblems(config: LoopgateConfig, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const servers = config.mcp.servers;
  for (const [name, server] of Object.entries(servers)) {
    for (const [field, values] of [
      ["headers", server.headers],
      ["env", server.env],
    ] as const) {
      for (const [key, value] of Object.entries(values)) {
        for (const ref of unsetEnvRefs(value, env)) {
          problems.push(
            `mcp.servers.${name}.${field}.${key}: references \${${ref}}, which is not set in the environment`,
          );
        }
      }
    }
  }
  const known = Object.keys(servers);
  const checkNames = (names: string[] | undefined, at: string) => {
    for (const [i, name] of (names ?? []).entries()) {
      if (servers[name]) continue;
      problems.push(
        `${at}[${i}]: unknown MCP server "${name}" (configured: ${known.length ? known.join(", ") : "none"})`,
      );
    }
  };
  checkNames(config.agents.defaults.mcp.servers, "agents.defaults.mcp.servers");
  for (const [i, agent] of config.agents.list.entries()) {
    checkNames(agent.mcp?.servers, `agents.list[${i}].mcp.servers`);
  }
  return problems;
}

/** The Postgres backend needs a server: said at load, not at the first write. */
function storageProblems(config: LoopgateConfig, env: NodeJS.ProcessEnv): string[] {
  if (config.storage.backend !== "postgres") return [];
  try {
    if (postgresUrlFrom(config.storage.postgres.url, env)) return [];
  } catch (err) {
    return [(err as Error).message];
  }
  return [
    'storage.postgres.url: required when storage.backend is "postgres" (or set the LOOPGATE_POSTGRES_URL environment variable)',
  ];
}

/** A stalled run is aborted at stuckSessionAbortMs; at or below the warn threshold it would never be reported first. */
function diagnosticsProblems(config: LoopgateConfig): string[] {
  const { stuckSessionWarnMs: warn, stuckSessionAbortMs: abort } = config.diagnostics;
  if (abort === undefined || abort > warn) return [];
  return [`diagnostics.stuckSessionAbortMs: must be greater than diagnostics.stuckSessionWarnMs (${warn})`];
}

/** A metrics listener of its own needs a port; the gateway's own port cannot be it. */
function metricsProblems(config: LoopgateConfig): string[] {
  const { port, bind } = config.gateway.metrics;
  if (port === undefined) {
    return bind === undefined
      ? []
      : [
          "gateway.metrics.bind: needs gateway.metrics.port (without a port of its own, /metrics is served on the gateway's port)",
        ];
  }
  if (port !== 0 && port === config.gateway.port) {
    return [`gateway.metrics.port: ${port} is gateway.port; leave it unset to serve /metrics on the gateway's port`];
  }
  return [];
}

function providerProblems(config: LoopgateConfig, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  for (const [id, provider] of Object.entries(config.models.providers)) {
    const at = `models.providers.${id}`;
    for (const name of unsetEnvRefs(provider.apiKey, env)) {
      problems.push(`${at}.apiKey: references \${${name}}, which is not set in the environment`);
    }
    if (provider.timeoutSeconds === 0 && !isPrivateNetworkBaseUrl(provider.baseUrl)) {
      problems.push(
        `${at}.timeoutSeconds: 0 turns the model idle watchdog off, which only an endpoint on this machine or a private network may do (a loopback, 10/8, 172.16/12, 192.168/16, fc00::/7 or .local baseUrl such as http://127.0.0.1:11434/v1)`,
      );
    }
    if (provider.api !== "scripted") continue;
    if (!provider.script) problems.push(`${at}.script: required for api "scripted" (the JSON5 script to play)`);
    else if (!fs.existsSync(provider.script)) problems.push(`${at}.script: file not found: ${provider.script}`);
  }
  return problems;
}

function unsetEnvRefs(value: string | undefined, env: NodeJS.ProcessEnv): string[] {
  if (!value) return [];
  const names = [...value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]);
  return names.filter((name) => !env[name]);
}

function agentProblems(config: LoopgateConfig): string[] {
  const problems: string[] = [];
  const providers = Object.keys(config.models.providers);
  const checkRef = (ref: string | undefined, at: string) => {
    const providerId = ref?.slice(0, ref.indexOf("/"));
    if (ref && providerId && !providers.includes(providerId)) {
      const known = providers.length ? providers.join(", ") : "none";
      problems.push(`${at}: unknown provider "${providerId}" in "${ref}" (configured providers: ${known})`);
    }
  };
  const { model, compaction } = config.agents.defaults;
  checkRef(model.primary, "agents.defaults.model.primary");
  for (const [i, ref] of model.fallbacks.entries()) checkRef(ref, `agents.defaults.model.fallbacks[${i}]`);
  checkRef(compaction.model, "agents.defaults.compaction.model");
  const firstIndex = new Map<string, number>();
  let firstDefault: number | undefined;
  config.agents.list.forEach((agent, i) => {
    const at = `agents.list[${i}]`;
    if (typeof agent.model === "string") checkRef(agent.model, `${at}.model`);
    else {
      checkRef(agent.model?.primary, `${at}.model.primary`);
      for (const [j, ref] of (agent.model?.fallbacks ?? []).entries()) checkRef(ref, `${at}.model.fallbacks[${j}]`);
    }
    const seen = firstIndex.get(agent.id);
    if (seen !== undefined) problems.push(`${at}.id: duplicate agent id "${agent.id}" (also agents.list[${seen}])`);
    else firstIndex.set(agent.id, i);
    if (agent.default !== true) return;
    if (firstDefault !== undefined) {
      problems.push(`${at}.default: only one agent can be the default (agents.list[${firstDefault}] already is)`);
    } else firstDefault = i;
  });
  return problems;
}

/**
 * What every load does after validation: finish the config, then report its load-time problems, together with
 * those validation already found (`earlier`), all at once.
 */
export function finishAndCheck(
  config: LoopgateConfig,
  file: string | undefined,
  env: NodeJS.ProcessEnv,
  earlier: readonly string[] = [],
): LoopgateConfig {
  const finished = finishConfig(config, file, env);
  const problems = [...earlier, ...checkConfig(finished, env)];
  if (problems.length > 0) throw new ConfigError(problems, file);
  return finished;
}
