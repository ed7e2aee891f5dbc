/*
 * OpenClaw config keys Loopgate has nothing for (channels, sandboxes, heartbeats, TTS, ...). An OpenClaw config
 * carries them, and refusing the whole file for them would stop a user at the first step; ignoring them silently
 * would let someone believe they work. So they are taken out before validation and named in ONE warning at load
 * ("not supported by Loopgate"). Any other unknown key is still an error: a typo is not an OpenClaw key.
 * Zod-free: the cached CLI path (cached.ts) computes the warning on every load without the schema.
 * The list follows OpenClaw's docs/gateway/configuration-reference.md; keys.test.ts checks that no entry is also a
 * key the schema accepts (a key Loopgate honours must never be stripped).
 */

/** key paths; "*" matches every record entry or array element */
export const openclawOnlyKeys: readonly string[] = [
  // whole sections Loopgate has no counterpart for
  ...[
    "channels",
    "bindings",
    "commands",
    "talk",
    "browser",
    "ui",
    "canvasHost",
    "discovery",
    "secrets",
    // auth profiles' account e-mail (OpenClaw's OAuth bookkeeping); profiles, order and cooldowns are Loopgate's too
    "auth.profiles.*.email",
    "logging",
    "cli",
    "wizard",
    "web",
    "broadcast",
    // env's variables are applied (configEnvVars below); importing a login shell's is not
    "env.shellEnv",
    // written by OpenClaw itself (lastTouchedVersion)
    "meta",
  ],
  ...prefixed("agents.defaults", [
    "repoRoot",
    "skipBootstrap",
    "bootstrapMaxChars",
    "bootstrapTotalMaxChars",
    "bootstrapPromptTruncationWarning",
    "imageMaxDimensionPx",
    "userTimezone",
    "timeFormat",
    "envelopeTimezone",
    "envelopeTimestamp",
    "envelopeElapsed",
    "imageModel",
    "imageGenerationModel",
    "pdfModel",
    "pdfMaxBytesMb",
    "pdfMaxPages",
    "elevatedDefault",
    "mediaMaxMb",
    "contextTokens",
    "cliBackends",
    "heartbeat",
    "contextPruning",
    "blockStreamingChunk",
    "blockStreamingCoalesce",
    "humanDelay",
    "typingMode",
    "typingIntervalSeconds",
    "subagents",
    "memorySearch",
    "models.*.params",
    "models.*.streaming",
  ]),
  ...prefixed("agents.defaults.compaction", [
    "mode",
    "timeoutSeconds",
    "reserveTokensFloor",
    "identifierPolicy",
    "identifierInstructions",
    "postCompactionSections",
    "memoryFlush",
  ]),
  ...prefixed("agents.defaults.sandbox", openclawOnlySandboxKeys()),
  ...prefixed("agents.list.*", [
    "agentDir",
    "params",
    "identity",
    "groupChat",
    ...prefixed("sandbox", openclawOnlySandboxKeys()),
    "runtime",
    "subagents",
    "heartbeat",
    "humanDelay",
    "skills",
    "tools.profile",
    "tools.elevated",
    "tools.loopDetection",
    "tools.byProvider",
  ]),
  ...prefixed("session", [
    "scope",
    "dmScope",
    "identityLinks",
    "reset",
    "resetByType",
    "resetByChannel",
    "resetTriggers",
    "idleMinutes",
    "store",
    "parentForkMaxTokens",
    "maintenance",
    "threadBindings",
    "mainKey",
    "agentToAgent",
    "sendPolicy",
    "typingMode",
    "typingIntervalSeconds",
  ]),
  ...prefixed("messages", [
    "responsePrefix",
    "ackReaction",
    "ackReactionScope",
    "removeAckAfterReply",
    "inbound",
    "tts",
    "groupChat",
    "messagePrefix",
  ]),
  ...prefixed("tools", [
    "profile",
    "byProvider",
    "elevated",
    "loopDetection",
    "web",
    "media",
    "links",
    "agentToAgent",
    "sessions",
    "sessions_spawn",
    "subagents",
    "sandbox",
    "exec.backgroundMs",
    "exec.timeoutSec",
    "exec.cleanupMs",
    "exec.notifyOnExit",
    "exec.notifyOnExitEmptySuccess",
    "exec.applyPatch",
    "exec.host",
    "exec.node",
    "exec.pathPrepend",
    "exec.safeBins",
  ]),
  "models.bedrockDiscovery",
  ...prefixed("models.providers.*", ["auth", "authHeader", "injectNumCtxForOpenAICompat", "models.*.compat"]),
  ...prefixed("gateway", [
    "mode",
    "customBindHost",
    "tailscale",
    "controlUi",
    "remote",
    "trustedProxies",
    "allowRealIpFallback",
    "tools",
    "push",
    // the endpoints' `enabled` switches are Loopgate's too (gateway/openai-http/); OpenClaw's other knobs are not
    "http.securityHeaders",
    "http.endpoints.chatCompletions.maxBodyBytes",
    "http.endpoints.chatCompletions.maxImageParts",
    "http.endpoints.chatCompletions.maxTotalImageBytes",
    "http.endpoints.chatCompletions.images",
    "http.endpoints.responses.maxBodyBytes",
    "http.endpoints.responses.maxUrlParts",
    "http.endpoints.responses.files",
    "http.endpoints.responses.images",
    "reload",
    "tls",
    "channelHealthCheckMinutes",
    "channelStaleEventThresholdMinutes",
    "channelMaxRestartsPerHour",
    "auth.mode",
    "auth.password",
    "auth.allowTailscale",
    "auth.rateLimit",
    "auth.trustedProxy",
  ]),
  ...prefixed("cron", ["webhook", "webhookToken", "sessionRetention", "store", "runLog.maxBytes"]),
  ...prefixed("skills", ["allowBundled", "load", "install", "entries"]),
  ...prefixed("plugins", [
    "enabled",
    "allow",
    "deny",
    "slots",
    "installs",
    "entries.*.hooks",
    "entries.*.apiKey",
    "entries.*.env",
  ]),
  ...prefixed("hooks", [
    "enabled",
    "token",
    "path",
    "maxBodyBytes",
    "defaultSessionKey",
    "allowRequestSessionKey",
    "allowedSessionKeyPrefixes",
    "allowedAgentIds",
    "presets",
    "transformsDir",
    "mappings",
    "gmail",
  ]),
];

/**
 * The sandbox keys Loopgate has no counterpart for: mode, scope, workspaceAccess, backend, network, env, binds, the
 * limits and docker.image are honoured (tools/sandbox/); OpenClaw's other docker knobs, ssh, browser and prune are not.
 */
function openclawOnlySandboxKeys(): string[] {
  return [
    "ssh",
    "browser",
    "prune",
    "sessionToolsVisibility",
    ...prefixed("docker", [
      "containerPrefix",
      "workdir",
      "readOnlyRoot",
      "tmpfs",
      "network",
      "user",
      "capDrop",
      "env",
      "setupCommand",
      "pidsLimit",
      "memory",
      "memorySwap",
      "cpus",
      "ulimits",
      "seccompProfile",
      "apparmorProfile",
      "dns",
      "extraHosts",
      "binds",
    ]),
  ];
}

/**
 * OpenClaw's `env` block: variables for the process, as `NAME: "value"` or under `vars`. They fill in what the
 * environment lacks (an existing variable wins, as in OpenClaw), before `${NAME}` references are checked.
 */
export function configEnvVars(raw: unknown): Record<string, string> {
  const block = isRecord(raw) ? raw.env : undefined;
  if (!isRecord(block)) return {};
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...block, ...(isRecord(block.vars) ? block.vars : {}) })) {
    if (typeof value === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) vars[name] = value;
  }
  return vars;
}

/** Sets the config's env variables that `env` lacks; names only are returned (values may be keys). */
export function applyConfigEnv(raw: unknown, env: NodeJS.ProcessEnv): string[] {
  const applied: string[] = [];
  for (const [name, value] of Object.entries(configEnvVars(raw))) {
    if (env[name] !== undefined) continue;
    env[name] = value;
    applied.push(name);
  }
  return applied;
}

function prefixed(prefix: string, keys: string[]): string[] {
  return keys.map((k) => `${prefix}.${k}`);
}

/**
 * A copy of `raw` without the OpenClaw-only keys it sets, and their concrete paths (e.g. "agents.list[0].identity").
 * Only names are reported, never values: some (gateway.auth.password, env, hooks.token) are secrets.
 */
export function stripOpenClawOnlyKeys(raw: unknown): { raw: unknown; ignored: string[] } {
  if (!isRecord(raw)) return { raw, ignored: [] };
  const copy = structuredClone(raw);
  const ignored: string[] = [];
  for (const key of openclawOnlyKeys) removeAt(copy, key.split("."), "", ignored);
  // what is left of `env` is applied by applyConfigEnv, not read by the schema
  delete (copy as Record<string, unknown>).env;
  return { raw: copy, ignored };
}

/** The one load warning for the ignored keys, or undefined when there are none. */
export function openclawOnlyWarning(ignored: readonly string[]): string | undefined {
  if (ignored.length === 0) return undefined;
  return `not supported by Loopgate, ignored (OpenClaw keys Loopgate has no feature for): ${ignored.join(", ")}`;
}

const warned = new Set<string>();

/**
 * Says the warning once per process and file (a gateway reloads nothing, but a CLI command may load twice): on
 * `onWarning` when given, else on stderr. Returns it, so callers can show it elsewhere too (config validate).
 */
export function warnOpenClawOnly(
  file: string | undefined,
  ignored: readonly string[],
  onWarning?: (message: string) => void,
): string | undefined {
  const warning = openclawOnlyWarning(ignored);
  if (!warning) return undefined;
  const message = `${file ?? "config"}: ${warning}`;
  if (onWarning) onWarning(message);
  else if (!warned.has(message)) {
    warned.add(message);
    process.stderr.write(`loopgate: warning: ${message}\n`);
  }
  return warning;
}

function removeAt(node: unknown, segments: string[], at: string, ignored: string[]): void {
  if (!isRecord(node) && !Array.isArray(node)) return;
  const [head, ...rest] = segments;
  const container = node as Record<string, unknown>;
  const keys = head === "*" ? Object.keys(container) : Object.hasOwn(container, head) ? [head] : [];
  for (const key of keys) {
    const here = Array.isArray(node) ? `${at}[${key}]` : at ? `${at}.${key}` : key;
    if (rest.length > 0) {
      removeAt(container[key], rest, here, ignored);
    } else if (!Array.isArray(node) && container[key] !== undefined) {
      delete container[key];
      ignored.push(here);
    }
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}
