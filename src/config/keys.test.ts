import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentService, RunParamError } from "../agent/service.js";
import { silentLogger } from "../infra/logger.js";
import { readProcessStartTime } from "../infra/process-liveness.js";
import { sqliteRuntime } from "../node/compose.js";
import { ScriptedProvider, type ScriptedTurn } from "../providers/scripted.js";
import type { ModelRequest } from "../providers/types.js";
import { resolveMaxHoldMs } from "../session/write-lock.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { startFakeModelServer } from "../testing/fake-model-server.js";
import type { Tool } from "../tools/types.js";
import { describeAgents } from "./agents.js";
import { ConfigError, loadConfig, parseConfig } from "./load.js";
import { openclawOnlyKeys } from "./openclaw-only.js";
import { configSchema } from "./schema.js";
import { schemaKeyPaths } from "./schema-keys.js";

/*
 * The key audit: every key the schema accepts is either read by code — and a named test shows that setting it
 * changes behaviour — or rejected at load as "not yet supported". A new key with neither fails the first test.
 */

const here = "src/config/keys.test.ts";
type Audit = { pinnedBy: [file: string, title: string] } | "rejected";
const pin = (file: string, title: string): Audit => ({ pinnedBy: [file, title] });

const T = {
  authProfiles: pin(
    "src/credentials/profiles.test.ts",
    "auth.profiles with key and keyRef (env, file), and a provider's apiKey as <provider>:default",
  ),
  authOrder: pin(
    "src/credentials/order.test.ts",
    "the agent's auth.order, then auth.order, then declaration; cooling and disabled last, soonest usable first",
  ),
  authBilling: pin(
    "src/credentials/cooldown.test.ts",
    "billing disables for billingBackoffHours, doubling up to billingMaxHours; failures older than failureWindowHours start the ladder over",
  ),
  agents: pin(here, "agents: the default agent, a listed agent's model, and an unknown agent id"),
  names: pin(here, "agents: a listed agent's name is shown where the configured agents are listed"),
  workspaces: pin(here, "workspaces: the default, a listed agent's and the sandbox root decide where files live"),
  request: pin(here, "model requests: thinkingDefault, maxSteps, a model's maxTokens and reasoning: false"),
  reasoning: pin(
    "src/agent/run/reply-shaping.test.ts",
    "reasoningDefault per agent beats agents.defaults, and the run's reasoningLevel beats both",
  ),
  verbose: pin(
    "src/agent/run/reply-shaping.test.ts",
    "off (the default) and verboseDefault: no summaries unless the config or the run asks",
  ),
  modelFacts: pin(
    "src/agent/run/reply-shaping.test.ts",
    "name and cost: the result names the model and estimates the run's cost from its usage",
  ),
  blockStreaming: pin(
    "src/agent/run/block-streaming.test.ts",
    "blockStreamingDefault on: a 5,000-char reply with a code fence arrives as balanced blocks, not repeated in the final",
  ),
  blockBreak: pin(
    "src/agent/run/block-streaming.test.ts",
    "blockStreamingBreak text_end sends blocks while the text streams; message_end only once the message is complete",
  ),
  openaiHttp: pin(
    "test/e2e/openai-http.test.ts",
    "gateway.http.endpoints: each endpoint answers only when enabled, /v1/models when either is, else 404 in OpenAI's error shape",
  ),
  lanes: pin(here, "agents.defaults.maxConcurrent is the global lane's concurrency"),
  toolPolicy: pin(
    "src/agent/run/tool-calls.test.ts",
    "tools.allow [group:fs] leaves every agent only the file tools, and an agent's allow narrows it further",
  ),
  toolDeny: pin(
    "src/agent/run/tool-calls.test.ts",
    "an agent with tools.deny [exec] is not offered exec, and a call to it is told exec is not available",
  ),
  budget: pin("src/prompt/context-budget.test.ts", "uses a configured reserve when it is smaller"),
  lock: pin(here, "session.writeLock.acquireTimeoutMs and agents.defaults.timeoutSeconds reach the run"),
  diagnostics: pin(
    "test/e2e/diagnostics-stuck-session.test.ts",
    "a model that stalls is reported long-running, then stalled and aborted, and the message queued behind it still answers",
  ),
  prune: pin(
    "src/gateway/run-pruning.test.ts",
    "a gateway start prunes old finished run records and keeps queued ones",
  ),
  pruneCount: pin(
    "src/gateway/run-pruning.test.ts",
    "the count cap drops the oldest finished records, then runs again hourly",
  ),
  queueMode: pin(
    "src/agent/service.test.ts",
    "per-message mode beats the session setting, which beats the channel setting, which beats the global mode",
  ),
  debounce: pin(
    "src/agent/service.test.ts",
    "queued messages wait for the active run and the quiet window, then run one at a time, each as its own turn",
  ),
  cap: pin("src/agent/service.test.ts", "old drops the oldest queued message with a receipt and no summary turn"),
  drop: pin(
    "src/agent/service.test.ts",
    "summarize drops the oldest and later delivers one overflow turn with a one-line summary of each",
  ),
  port: pin("test/e2e/gateway-cli.test.ts", "takes the port from --port over LOOPGATE_GATEWAY_PORT over gateway.port"),
  bind: pin(
    "test/e2e/gateway-cli.test.ts",
    "refuses to bind beyond loopback without a token (exit 2), and starts with one",
  ),
  tick: pin(
    "test/e2e/gateway-handshake.test.ts",
    "numbers every event frame of a connection 1, 2, 3, ... including ticks",
  ),
  maxPayload: pin("test/e2e/gateway-handshake.test.ts", "drops frames above maxPayload after connect"),
  grace: pin("test/e2e/gateway-runs.test.ts", "aborts and records runs still going when the grace ends"),
  provider: pin(here, "providers: api, baseUrl, apiKey, headers, timeoutSeconds and models reach the provider"),
  script: pin("src/config/check.test.ts", "a scripted provider needs a script that exists"),
  skills: pin(here, "skills.dirs, hooks.dirs and plugins.load.paths are resolved against the config file"),
  hooksInternal: pin(
    "src/hooks/internal.test.ts",
    "registers config-declared hook modules and reports a missing module without stopping",
  ),
  pluginConfig: pin("src/hooks/plugins.test.ts", "gives the plugin its own config and a logger prefixed with its id"),
  pluginOff: pin("src/hooks/plugins.test.ts", "a plugin disabled in entries is never imported"),
  policy: pin(
    "test/e2e/context-and-hooks.test.ts",
    "refuses a skill named in security.installPolicy.deny and leaves nothing in the skills dir",
  ),
  allow: pin("src/hooks/install.test.ts", "an allow list refuses anything it does not name"),
  sources: pin("src/hooks/install.test.ts", "a source type outside allowSources is refused"),
  schema: pin(here, "$schema is accepted and changes nothing (it is for editors)"),
  fallbacks: pin(
    "src/agent/run/attempt-loop.test.ts",
    "a primary that refuses connections: the fallback answers and is named in the result and agent.wait",
  ),
  agentFallbacks: pin(
    "src/agent/run/attempt-loop.test.ts",
    "a listed agent's own fallbacks are used, and when every model fails the error names each one",
  ),
  retry: pin(
    "src/agent/run/attempt-loop.test.ts",
    "models.providers.<id>.retry.attempts bounds the retries; baseMs/maxMs shape the waits",
  ),
  keepRecent: pin("src/agent/run/attempt-loop.test.ts", "/compact summarizes the history now and says what it did"),
  compactionModel: pin("src/agent/run/attempt-loop.test.ts", "compaction.model writes the summaries"),
  maxAttempts: pin(
    "src/agent/run/compaction-death-spiral.test.ts",
    "a summarizer that returns more than its input ends the run with context_length after at most 3 attempts",
  ),
  cronEvery2s: pin(
    "src/cron/scheduler.test.ts",
    "a job every 2 seconds runs exactly 5 times in 10 seconds, each as a cron-lane turn of its own session",
  ),
  cronStall: pin(
    "src/cron/scheduler.test.ts",
    "a job whose model stalls past its timeout is recorded as timeout, and the next job in the lane runs",
  ),
  cronOff: pin(
    "src/cron/scheduler.test.ts",
    "a stopped scheduler starts nothing, and disabled jobs and cron.enabled: false never run",
  ),
  cronTarget: pin(
    "src/cron/scheduler.test.ts",
    "a job that names an agent and a session runs there and keeps that session's history",
  ),
  quickCheck: pin(
    "test/e2e/storage-corruption.test.ts",
    "storage.quickCheckOnStart: false skips the check (for huge stores), so the same file starts",
  ),
  mcpStdio: pin(
    "src/tools/mcp/source.test.ts",
    "command, args and cwd start the server: server-filesystem given a relative dir serves its cwd",
  ),
  mcpEnv: pin(
    "src/tools/mcp/source.test.ts",
    "get-env shows PATH, HOME, LANG and TERM but no provider key, gateway token or NODE_OPTIONS",
  ),
  mcpHttp: pin(
    "src/tools/mcp/source.test.ts",
    "headers reach the server with env references resolved, and a refused connection's error does not show them",
  ),
  mcpSse: pin("src/tools/mcp/source.test.ts", "legacy SSE (transport sse): echo answers"),
  mcpFilter: pin(
    "src/tools/mcp/source.test.ts",
    "toolFilter include and exclude decide which of the server's tools are offered",
  ),
  mcpTimeouts: pin(
    "src/tools/mcp/source.test.ts",
    "a command that does not exist, one that exits at once and one that never answers: failed, saying why; the rest work",
  ),
  mcpAllow: pin(
    "src/tools/mcp/source.test.ts",
    "tools(allowList) offers only the named servers' tools; approval marks always / glob-listed tools",
  ),
  mcpAgentServers: pin(
    "src/config/mcp-config.test.ts",
    "an agent's servers: its own list, else agents.defaults.mcp.servers, else every server",
  ),
  postgresOpen: pin(
    "src/node/backend.test.ts",
    "storage.backend: postgres opens a migrated store in storage.postgres.schema with its poolSize and statementTimeoutMs; the URL may come from LOOPGATE_POSTGRES_URL",
  ),
  sandboxMode: pin(
    "src/tools/sandbox/sandboxes.test.ts",
    "an agent's own sandbox keys win over the defaults, and explanations name the agent's key",
  ),
  sandboxScope: pin(
    "src/tools/sandbox/sandboxes.test.ts",
    "scope decides who shares a sandbox: one per session, per agent, or one for all",
  ),
  sandboxBackend: pin(
    "src/tools/sandbox/sandboxes.test.ts",
    "a config asking for bubblewrap where bwrap is missing fails, naming the key and the fix",
  ),
  sandboxCgroupLimits: pin(
    "src/tools/sandbox/sandboxes.test.ts",
    "limits bubblewrap cannot enforce are refused, naming the agent's key",
  ),
  sandboxDocker: pin(
    "src/tools/sandbox/sandboxes.test.ts",
    "a session scope with workspaceAccess none gets a fresh dir in docker.image; its end removes the dir and the container",
  ),
  sandboxIdle: pin(
    "src/tools/sandbox/sandboxes.test.ts",
    "a container nobody used for docker.idleMinutes is removed; one in use stays",
  ),
  sandboxAccess: pin(
    "test/e2e/sandbox-gateway.test.ts",
    "workspaceAccess ro: exec cannot write, the write tool is refused, a read-only bind is readable",
  ),
  sandboxEnv: pin(
    "test/e2e/sandbox-gateway.test.ts",
    "env shows no provider key, and the names in sandbox.env are passed in",
  ),
  sandboxLimits: pin(
    "test/e2e/sandbox-gateway.test.ts",
    "the agent's timeoutSeconds ends a longer command, and memoryMb caps each process's address space",
  ),
  sandboxNetwork: pin(
    "src/tools/sandbox/sandbox.conformance.ts",
    "network none: a server on the host's loopback cannot be reached; network host reaches it",
  ),
};

const audit: Record<string, Audit> = {
  $schema: T.schema,
  "agents.defaults.model.primary": T.agents,
  "agents.defaults.models.*.alias": pin(
    "src/config/openclaw-compat.test.ts",
    "openclaw-model-aliases-and-allowlist: agents.defaults.models aliases choose a model; outside the list is refused",
  ),
  "models.mode": pin(
    "src/config/openclaw-compat.test.ts",
    "openclaw-models-mode-merge-and-replace: replace uses the configured providers alone, merge adds the env ones",
  ),
  "agents.defaults.model.fallbacks": T.fallbacks,
  "agents.defaults.workspace": T.workspaces,
  "agents.defaults.timeoutSeconds": T.lock,
  "agents.defaults.maxConcurrent": T.lanes,
  "agents.defaults.thinkingDefault": T.request,
  "agents.defaults.reasoningDefault": T.reasoning,
  "agents.defaults.verboseDefault": T.verbose,
  "agents.defaults.maxSteps": T.request,
  "agents.defaults.blockStreamingDefault": T.blockStreaming,
  "agents.defaults.blockStreamingBreak": T.blockBreak,
  "agents.defaults.streamCoalesceMs": pin(
    "src/agent/run/delta-coalescer.test.ts",
    "agents.defaults.streamCoalesceMs: 0 sends one assistant event per model chunk",
  ),
  "agents.defaults.sandbox.workspaceRoot": T.workspaces,
  "agents.defaults.sandbox.mode": T.sandboxMode,
  "agents.defaults.sandbox.scope": T.sandboxScope,
  "agents.defaults.sandbox.workspaceAccess": T.sandboxAccess,
  "agents.defaults.sandbox.backend": T.sandboxBackend,
  "agents.defaults.sandbox.network": T.sandboxNetwork,
  "agents.defaults.sandbox.env": T.sandboxEnv,
  "agents.defaults.sandbox.binds": T.sandboxAccess,
  "agents.defaults.sandbox.timeoutSeconds": T.sandboxLimits,
  "agents.defaults.sandbox.memoryMb": T.sandboxLimits,
  "agents.defaults.sandbox.pids": T.sandboxCgroupLimits,
  "agents.defaults.sandbox.cpus": T.sandboxCgroupLimits,
  "agents.defaults.sandbox.docker.image": T.sandboxDocker,
  "agents.defaults.sandbox.docker.idleMinutes": T.sandboxIdle,
  "agents.list[].sandbox.mode": T.sandboxMode,
  "agents.list[].sandbox.scope": T.sandboxScope,
  "agents.list[].sandbox.workspaceAccess": T.sandboxAccess,
  "agents.list[].sandbox.backend": T.sandboxBackend,
  "agents.list[].sandbox.network": T.sandboxNetwork,
  "agents.list[].sandbox.env": T.sandboxEnv,
  "agents.list[].sandbox.binds": T.sandboxAccess,
  "agents.list[].sandbox.timeoutSeconds": T.sandboxLimits,
  "agents.list[].sandbox.memoryMb": T.sandboxLimits,
  "agents.list[].sandbox.pids": T.sandboxCgroupLimits,
  "agents.list[].sandbox.cpus": T.sandboxCgroupLimits,
  "agents.list[].sandbox.docker.image": T.sandboxDocker,
  "agents.list[].sandbox.docker.idleMinutes": T.sandboxIdle,
  "agents.defaults.mcp.servers": T.mcpAgentServers,
  "agents.list[].mcp.servers": T.mcpAgentServers,
  "agents.defaults.compaction.reserveTokens": T.budget,
  "agents.defaults.compaction.keepRecentTokens": T.keepRecent,
  "agents.defaults.compaction.maxAttempts": T.maxAttempts,
  "agents.defaults.compaction.model": T.compactionModel,
  "agents.list[].id": T.agents,
  "agents.list[].name": T.names,
  "agents.list[].workspace": T.workspaces,
  "agents.list[].model.primary": T.agents,
  "agents.list[].model.fallbacks": T.agentFallbacks,
  "agents.list[].default": T.agents,
  "agents.list[].reasoningDefault": T.reasoning,
  "agents.list[].verboseDefault": T.verbose,
  "agents.list[].tools.allow": T.toolPolicy,
  "agents.list[].tools.deny": T.toolDeny,
  "models.providers.*.api": T.provider,
  "models.providers.*.baseUrl": T.provider,
  "models.providers.*.apiKey": T.provider,
  "models.providers.*.headers": T.provider,
  "models.providers.*.timeoutSeconds": T.provider,
  "models.providers.*.selfHosted": pin(
    "src/agent/idle-watchdog-cases.test.ts",
    "models.providers.<id>.selfHosted: a network hostname gets 300 s by config, and a private address without it",
  ),
  "models.providers.*.models[].id": T.request,
  "models.providers.*.models[].name": T.modelFacts,
  "models.providers.*.models[].cost.input": T.modelFacts,
  "models.providers.*.models[].cost.output": T.modelFacts,
  "models.providers.*.models[].cost.cacheRead": T.modelFacts,
  "models.providers.*.models[].cost.cacheWrite": T.modelFacts,
  "models.providers.*.models[].contextWindow": T.provider,
  "models.providers.*.models[].maxTokens": T.request,
  "models.providers.*.models[].reasoning": T.request,
  "models.providers.*.models[].input": pin(
    "src/agent/run/images.test.ts",
    "goes as a note to a model whose entry has no image input (the default for openai-completions)",
  ),
  "models.providers.*.script": T.script,
  "models.providers.*.retry.attempts": T.retry,
  "models.providers.*.retry.baseMs": T.retry,
  "models.providers.*.retry.maxMs": T.retry,
  "session.writeLock.acquireTimeoutMs": T.lock,
  "session.runResults.maxAgeHours": T.prune,
  "session.runResults.maxCount": T.pruneCount,
  "storage.quickCheckOnStart": T.quickCheck,
  "storage.backend": pin("src/node/backend.test.ts", "storage.backend: sqlite opens the state dir's database file"),
  "storage.postgres.url": T.postgresOpen,
  "storage.postgres.schema": T.postgresOpen,
  "storage.postgres.poolSize": T.postgresOpen,
  "storage.postgres.statementTimeoutMs": T.postgresOpen,
  "cluster.nodeId": pin(
    "src/cluster/wire.test.ts",
    "cluster.nodeId names the node (kept across restarts); unset, each start gets <hostname>-<pid>-<random>",
  ),
  "cluster.workspace": pin(
    "src/cluster/workspace-layout.test.ts",
    "no warning once cluster.workspace declares a layout, or when the workspace is on a network file system",
  ),
  "storage.postgres.leaseMs": pin(
    "src/cluster/wire.test.ts",
    "storage.postgres.leaseMs sets the lease of a Postgres gateway's node: its heartbeat, takeover and sweep every third",
  ),
  "messages.queue.mode": T.queueMode,
  "messages.queue.byChannel": T.queueMode,
  "messages.queue.debounceMs": T.debounce,
  "messages.queue.cap": T.cap,
  "messages.queue.drop": T.drop,
  "gateway.port": T.port,
  "gateway.bind": T.bind,
  "gateway.auth.token": T.bind,
  "gateway.auth.tokens[].token": pin(
    "test/e2e/gateway-scopes.test.ts",
    "sending into a session the token does not grant is forbidden, names the grant, and stores nothing",
  ),
  "gateway.auth.tokens[].tokenHash": pin(
    "test/e2e/gateway-scopes.test.ts",
    "a tokenHash entry accepts the token whose sha256 it is, and nothing else",
  ),
  "gateway.auth.tokens[].scopes": pin(
    "test/e2e/gateway-scopes.test.ts",
    "a token's scopes cap the scopes a client asks for in connect",
  ),
  "gateway.auth.tokens[].sessions": pin(
    "test/e2e/gateway-scopes.test.ts",
    "%s only: every method inside and outside the token's granted sessions",
  ),
  "gateway.auth.tokens[].commands": pin(
    "test/e2e/in-band-control.test.ts",
    "a-token-with-commands-false-cannot-stop-others: /stop and interrupt are refused, naming the key; A's run goes on",
  ),
  "gateway.tickIntervalMs": T.tick,
  "gateway.maxPayload": T.maxPayload,
  "gateway.maxBufferedBytes": pin(
    "test/e2e/gateway-runs.test.ts",
    "disconnects a client that stops reading while a fast one keeps receiving",
  ),
  "gateway.slowConsumerMs": pin(
    "test/e2e/gateway-big-replies.test.ts",
    "one reply larger than the buffer limit drops its reader only when gateway.slowConsumerMs is 0",
  ),
  "gateway.maxPageBytes": pin(
    "test/e2e/gateway-big-replies.test.ts",
    "a history page stops before gateway.maxPageBytes and its cursor continues where it stopped",
  ),
  "gateway.preAuth.maxConnections": pin(
    "test/e2e/gateway-preauth.test.ts",
    "above the total cap the oldest silent connection makes room, whatever its address; with none silent the newcomer is refused",
  ),
  "gateway.preAuth.maxConnectionsPerAddress": pin(
    "test/e2e/gateway-preauth.test.ts",
    "above the per-address cap the oldest silent connection of that address makes room; with none silent the newcomer is refused",
  ),
  "gateway.preAuth.silentTimeoutMs": pin(
    "test/e2e/gateway-preauth.test.ts",
    "a socket that sends nothing is closed after gateway.preAuth.silentTimeoutMs, with the reason",
  ),
  "gateway.maxInFlightPerConnection": pin(
    "test/e2e/gateway-amplification.test.ts",
    "a connection's requests beyond maxInFlightPerConnection are refused as retryable while other clients are served",
  ),
  "gateway.maxConnections": pin(
    "test/e2e/gateway-memory-limits.test.ts",
    "connections-capped-per-token-and-in-total: a connect over gateway.maxConnectionsPerToken or gateway.maxConnections is refused, retryable, naming the setting",
  ),
  "gateway.maxConnectionsPerToken": pin(
    "test/e2e/gateway-memory-limits.test.ts",
    "connections-capped-per-token-and-in-total: a connect over gateway.maxConnectionsPerToken or gateway.maxConnections is refused, retryable, naming the setting",
  ),
  "gateway.maxMessageSubscriptionsPerConnection": pin(
    "test/e2e/gateway-memory-limits.test.ts",
    "message-subscriptions-capped-per-connection: following more sessions than gateway.maxMessageSubscriptionsPerConnection is refused, naming the setting",
  ),
  "gateway.attachments.imageConcurrency": pin(
    "test/e2e/gateway-memory-limits.test.ts",
    "image-bombs-decoded-a-few-at-a-time: concurrent image attachments never decode more than gateway.attachments.imageConcurrency at once",
  ),
  "gateway.attachments.maxInFlightBytesPerConnection": pin(
    "test/e2e/gateway-memory-limits.test.ts",
    "attachment-bytes-capped-per-connection: a second message while the first one's images are prepared is refused over gateway.attachments.maxInFlightBytesPerConnection",
  ),
  "gateway.shutdownGraceMs": T.grace,
  "gateway.reload.mode": pin(
    "test/e2e/config-hot-reload.test.ts",
    "reload mode off: an edit waits until SIGHUP, which reloads the file",
  ),
  "gateway.reload.debounceMs": pin(
    "src/gateway/config-reload.test.ts",
    "a burst of writes is read once, after the file has been quiet for gateway.reload.debounceMs",
  ),
  "gateway.allowedOrigins": pin(
    "test/e2e/gateway-handshake.test.ts",
    "browser origins: loopback and gateway.allowedOrigins connect, any other is refused naming the setting",
  ),
  "gateway.http.endpoints.chatCompletions.enabled": T.openaiHttp,
  "gateway.http.endpoints.responses.enabled": T.openaiHttp,
  "gateway.metrics.enabled": pin(
    "test/e2e/gateway-metrics.test.ts",
    "off by default: /metrics is not found, and nothing is measured",
  ),
  "gateway.metrics.port": pin(
    "test/e2e/gateway-metrics.test.ts",
    "gateway.metrics.port: /metrics is served there, and not on the gateway's port",
  ),
  "gateway.metrics.bind": pin(
    "test/e2e/gateway-metrics.test.ts",
    "a metrics port beyond loopback without a token is refused at start, naming the keys to set",
  ),
  "diagnostics.enabled": T.diagnostics,
  "diagnostics.stuckSessionWarnMs": T.diagnostics,
  "diagnostics.stuckSessionAbortMs": T.diagnostics,
  "skills.dirs": T.skills,
  "hooks.dirs": T.skills,
  "hooks.internal[].events": T.hooksInternal,
  "hooks.internal[].module": T.hooksInternal,
  "hooks.internal[].name": T.hooksInternal,
  "plugins.load.paths": T.skills,
  "plugins.entries.*.enabled": T.pluginOff,
  "plugins.entries.*.config": T.pluginConfig,
  "security.installPolicy.allow": T.allow,
  "security.installPolicy.deny": T.policy,
  "security.installPolicy.allowSources": T.sources,
  "security.installPolicy.denySources": T.sources,
  "tools.allow": T.toolPolicy,
  "tools.deny": T.toolDeny,
  "tools.exec.security": pin(
    "src/agent/exec-approvals.test.ts",
    "security comes from the caller's default unless tools.exec.security sets it",
  ),
  "tools.exec.ask": pin(
    "test/e2e/exec-cli.test.ts",
    "--local without a terminal never blocks on a question: exec is denied with the reason and the run goes on",
  ),
  "tools.exec.allowlist": pin(
    "src/agent/exec-approvals.test.ts",
    "a miss waits for an operator; allow-once runs it once and the next identical call asks again",
  ),
  "tools.exec.approvalTimeoutSeconds": pin(
    "test/e2e/exec-approvals.test.ts",
    "nobody answers: after the timeout the command is denied, the model is told, and operators see it expired",
  ),
  "tools.exec.env": pin(
    "test/e2e/exec-cli.test.ts",
    "tools.exec.env passes a named variable through, and nothing else",
  ),
  "audit.retentionDays": pin(
    "src/events/audit-retention.test.ts",
    "a gateway start drops audit rows older than audit.retentionDays and keeps the recent ones",
  ),
  "audit.maxRows": pin(
    "src/events/audit-retention.test.ts",
    "audit.maxRows keeps only the newest rows, and the pass runs again every hour until stopped",
  ),
  "audit.queueSize": pin(
    "test/e2e/gateway-audit.test.ts",
    "audit.queueSize bounds the write queue: rows beyond it are dropped, counted in health and audit.list",
  ),
  // spend control (limits/, SPEC 25)
  "gateway.auth.tokens[].name": pin(
    "test/e2e/spend-control.test.ts",
    "a token with runsPerMinute 5 gets rate_limited on the 6th run within a minute, with retryAfterMs; nothing stored",
  ),
  "gateway.auth.tokens[].limits.runsPerMinute": pin(
    "test/e2e/spend-control.test.ts",
    "a token with runsPerMinute 5 gets rate_limited on the 6th run within a minute, with retryAfterMs; nothing stored",
  ),
  "gateway.auth.tokens[].limits.concurrentRuns": pin(
    "src/limits/spend-control.test.ts",
    "concurrentRuns counts runs until they end; tokensPerDay reads the token's spend today",
  ),
  "gateway.auth.tokens[].limits.tokensPerDay": pin(
    "src/limits/spend-control.test.ts",
    "concurrentRuns counts runs until they end; tokensPerDay reads the token's spend today",
  ),
  "limits.tokens.runsPerMinute": pin(
    "test/e2e/spend-control.test.ts",
    "a token with runsPerMinute 5 gets rate_limited on the 6th run within a minute, with retryAfterMs; nothing stored",
  ),
  "limits.tokens.concurrentRuns": pin(
    "src/limits/spend-control.test.ts",
    "concurrentRuns counts runs until they end; tokensPerDay reads the token's spend today",
  ),
  "limits.tokens.tokensPerDay": pin(
    "src/limits/spend-control.test.ts",
    "concurrentRuns counts runs until they end; tokensPerDay reads the token's spend today",
  ),
  "limits.timeZone": pin(
    "src/limits/spend-control.test.ts",
    "limits.timeZone: a day budget in America/New_York resets at New York's midnight, not UTC's",
  ),
  "limits.syncIntervalMs": pin(
    "src/limits/spend-control.test.ts",
    "a rolling window forgets spend older than its hours; limits.syncIntervalMs is how long a sum is trusted before it is re-read",
  ),
  "limits.approvalTimeoutSeconds": pin(
    "src/limits/spend-control.test.ts",
    "a pause budget waits for an answer: allow-once lets one call through, raise lets the run go on, and a timeout denies",
  ),
  "limits.budgets[].id": pin(
    "test/e2e/spend-control.test.ts",
    "a day budget of $0.01 for agent main: turns run until the spend crosses it, then the next call and the next turn are refused before any model request",
  ),
  "limits.budgets[].scope": pin(
    "src/limits/spend-control.test.ts",
    "match picks the agents a budget applies to; without match every agent has a budget of its own",
  ),
  "limits.budgets[].match": pin(
    "src/limits/spend-control.test.ts",
    "match picks the agents a budget applies to; without match every agent has a budget of its own",
  ),
  "limits.budgets[].window.rollingHours": pin(
    "src/limits/spend-control.test.ts",
    "a rolling window forgets spend older than its hours; limits.syncIntervalMs is how long a sum is trusted before it is re-read",
  ),
  "limits.budgets[].maxUsd": pin(
    "test/e2e/spend-control.test.ts",
    "a day budget of $0.01 for agent main: turns run until the spend crosses it, then the next call and the next turn are refused before any model request",
  ),
  "limits.budgets[].maxTokens": pin(
    "src/limits/spend-control.test.ts",
    "the day's spend is read back from the ledger by a fresh process, and a new day starts from zero",
  ),
  "limits.budgets[].action": pin(
    "test/e2e/spend-control.test.ts",
    "a pause budget: the run waits (waiting for budget), is allowed once from `loopgate approvals`, and completes",
  ),
  "limits.run.maxModelCalls": pin(
    "test/e2e/spend-control.test.ts",
    "a runaway loop (the model calls a tool forever) ends at limits.run.maxModelCalls with the spend reported",
  ),
  "limits.run.maxTokens": pin(
    "src/limits/spend-control.test.ts",
    "limits.run.maxTokens and maxUsd end a run once its own spend reaches them",
  ),
  "limits.run.maxUsd": pin(
    "src/limits/spend-control.test.ts",
    "limits.run.maxTokens and maxUsd end a run once its own spend reaches them",
  ),
  "limits.run.maxDurationSeconds": pin(
    "src/limits/spend-control.test.ts",
    "limits.run caps: model calls, tokens and duration end the run with the spend reported",
  ),
  "limits.ledger.retentionDays": pin(
    "src/limits/spend-control.test.ts",
    "limits.ledger: queueSize drops (and counts) rows beyond it, retentionDays and maxRows prune the ledger",
  ),
  "limits.ledger.maxRows": pin(
    "src/limits/spend-control.test.ts",
    "limits.ledger: queueSize drops (and counts) rows beyond it, retentionDays and maxRows prune the ledger",
  ),
  "limits.ledger.queueSize": pin(
    "src/limits/spend-control.test.ts",
    "limits.ledger: queueSize drops (and counts) rows beyond it, retentionDays and maxRows prune the ledger",
  ),
  // read by tools/mcp/ (McpToolSource), which the gateway and the embedded CLI start (tools/mcp/start.ts)
  "mcp.servers.*.command": T.mcpStdio,
  "mcp.servers.*.args": T.mcpStdio,
  "mcp.servers.*.cwd": T.mcpStdio,
  "mcp.servers.*.env": T.mcpEnv,
  "mcp.servers.*.url": T.mcpHttp,
  "mcp.servers.*.headers": T.mcpHttp,
  "mcp.servers.*.transport": T.mcpSse,
  "mcp.servers.*.enabled": pin(
    "src/tools/mcp/source.test.ts",
    "enabled: false is never started and is listed as closed",
  ),
  "mcp.servers.*.toolFilter.include": T.mcpFilter,
  "mcp.servers.*.toolFilter.exclude": T.mcpFilter,
  "mcp.servers.*.requestTimeoutMs": pin(
    "src/tools/mcp/source.test.ts",
    "requestTimeoutMs: a call the server does not answer in time is a tool error naming the limit",
  ),
  "mcp.servers.*.connectionTimeoutMs": T.mcpTimeouts,
  "mcp.servers.*.approval.always": T.mcpAllow,
  // auth profiles (SPEC 23): credentials/
  "auth.profiles.*.provider": T.authProfiles,
  "auth.profiles.*.mode": T.authProfiles,
  "auth.profiles.*.key": T.authProfiles,
  "auth.profiles.*.keyRef.source": T.authProfiles,
  "auth.profiles.*.keyRef.id": T.authProfiles,
  "auth.profiles.*.keyRef.path": T.authProfiles,
  "auth.order": T.authOrder,
  "agents.list[].auth.order": T.authOrder,
  "auth.cooldowns.billingBackoffHours": T.authBilling,
  "auth.cooldowns.billingMaxHours": T.authBilling,
  "auth.cooldowns.failureWindowHours": T.authBilling,
  "cron.enabled": T.cronOff,
  "cron.catchUp": pin(
    "src/cron/scheduler.test.ts",
    "catchUp skip records the missed runs as one skipped entry and runs nothing at start",
  ),
  "cron.jobs[].id": T.cronEvery2s,
  "cron.jobs[].schedule": T.cronEvery2s,
  "cron.jobs[].tz": pin("src/cron/scheduler.test.ts", "tz: a job at 09:00 in Asia/Tokyo is next due at 00:00 UTC"),
  "cron.jobs[].message": T.cronEvery2s,
  "cron.jobs[].agentId": T.cronTarget,
  "cron.jobs[].sessionKey": T.cronTarget,
  "cron.jobs[].timeoutSeconds": T.cronStall,
  "cron.jobs[].model": T.cronStall,
  "cron.jobs[].enabled": T.cronOff,
  "cron.defaultTimeoutSeconds": pin(
    "src/cron/scheduler-hardening.test.ts",
    "job-without-timeoutSeconds-is-aborted-at-the-default-cron-deadline",
  ),
  "cron.maxConcurrentRuns": pin(
    "src/cron/scheduler-hardening.test.ts",
    "hanging-job-without-timeoutSeconds-does-not-hold-back-other-jobs",
  ),
  "cron.runLog.keepLines": pin(
    "src/cron/scheduler-hardening.test.ts",
    "cron.runLog.keepLines bounds every job's records, also a removed job's, on the prune cadence",
  ),
};

describe("every config key is read or rejected", () => {
  it("the audit names exactly the keys the schema accepts", () => {
    expect(Object.keys(audit).sort()).toEqual(schemaKeyPaths(configSchema).sort());
  });

  it("no OpenClaw-only key (stripped with the load warning) is a key the schema accepts", () => {
    // schema paths say "[]" for array elements and ".*" for record entries; the OpenClaw list says "*" for both
    const accepted = schemaKeyPaths(configSchema).map((k) => k.replaceAll("[]", ".*"));
    for (const key of openclawOnlyKeys) {
      const clash = accepted.find((a) => a === key || a.startsWith(`${key}.`));
      expect(clash, `${key} would strip the accepted key ${clash}`).toBeUndefined();
    }
  });

  it("each test the audit names exists", () => {
    const root = path.resolve(import.meta.dirname, "../..");
    for (const [key, entry] of Object.entries(audit)) {
      if (entry === "rejected") continue;
      const [file, title] = entry.pinnedBy;
      const text = fs.readFileSync(path.join(root, file), "utf8");
      expect(text.includes(JSON.stringify(title)), `${key}: no test "${title}" in ${file}`).toBe(true);
    }
  });

  it("every rejected key, when set, is refused at load as not yet supported, naming its path", () => {
    // none today: a key that nothing reads yet gets a sample here
    const samples: Record<string, unknown> = {};
    const rejected = Object.keys(audit).filter((k) => audit[k] === "rejected");
    expect(Object.keys(samples).sort()).toEqual(rejected.sort());
    for (const [key, raw] of Object.entries(samples)) {
      const err = (() => {
        try {
          parseConfig(raw, "/etc/loopgate.json5");
        } catch (e) {
          return e as ConfigError;
        }
      })();
      expect(err, key).toBeInstanceOf(ConfigError);
      const concrete = key.replace("[]", "[0]").replace("*", "p");
      expect(err?.problems.join("\n")).toContain(`${concrete}: not yet supported`);
    }
    // absent keys stay fine
    expect(() => parseConfig({ diagnostics: {} })).not.toThrow();
  });
});

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-keys-"));
  dirs.push(dir);
  return dir;
}

/** A real runtime over a real SQLite file; scripted providers `a` and `b` record every request. */
function runtime(
  raw: Record<string, unknown>,
  script: (req: ModelRequest) => ScriptedTurn = () => ({ text: "hi" }),
  tools: Tool[] = [],
) {
  const dir = tmp();
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  stores.push(store);
  const requests: Array<{ provider: string; req: ModelRequest }> = [];
  const provider = (id: string) =>
    new ScriptedProvider(id, (req) => {
      requests.push({ provider: id, req });
      return script(req);
    });
  const rt = sqliteRuntime({
    config: parseConfig(raw),
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    logger: silentLogger,
    providers: { a: provider("a"), b: provider("b") },
    tools,
  });
  const service = new AgentService(rt);
  let n = 0;
  const run = async (extra: Record<string, unknown> = {}) => {
    const accepted = service.accept({ message: "hello", idempotencyKey: `r${++n}`, ...extra });
    return { accepted, final: await service.final((await accepted).runId) };
  };
  return { dir, rt, store, service, requests, run };
}

describe("agents", () => {
  it("agents: the default agent, a listed agent's model, and an unknown agent id", async () => {
    const h = runtime({
      agents: {
        defaults: { model: { primary: "a/m0" } },
        list: [{ id: "main" }, { id: "ops", default: true, model: "b/m1" }, { id: "qa", model: { primary: "b/m2" } }],
      },
    });
    const plain = await h.run();
    expect((await plain.accepted).sessionKey).toBe("agent:ops:main"); // default: true
    expect(h.requests.at(-1)).toMatchObject({ provider: "b", req: { model: "m1" } }); // its own model
    await h.run({ agentId: "qa" });
    expect(h.requests.at(-1)).toMatchObject({ provider: "b", req: { model: "m2" } }); // model.primary
    await h.run({ agentId: "main" });
    expect(h.requests.at(-1)).toMatchObject({ provider: "a", req: { model: "m0" } }); // agents.defaults.model

    const sessionsBefore = h.store.countSessions();
    await expect(h.service.accept({ message: "x", idempotencyKey: "u1", agentId: "ghost" })).rejects.toThrow(
      RunParamError,
    );
    await expect(
      h.service.accept({ message: "x", idempotencyKey: "u2", sessionKey: "agent:ghost:main" }),
    ).rejects.toThrow(/unknown agent "ghost"; configured agents: main, ops \(default\), qa/);
    expect(h.store.countSessions()).toBe(sessionsBefore);
    expect(h.store.getRun("u1")).toBeUndefined();
    expect(fs.existsSync(path.join(h.dir, "workspace-ghost"))).toBe(false);
  });

  it("agents: a listed agent's name is shown where the configured agents are listed", () => {
    const config = parseConfig({ agents: { list: [{ id: "main", name: "Helper" }, { id: "r" }] } });
    expect(describeAgents(config)).toBe("main (default, Helper), r");
    expect(describeAgents(parseConfig({}))).toBe("main (default)");
  });

  it("workspaces: the default, a listed agent's and the sandbox root decide where files live", async () => {
    const root = tmp();
    const h = runtime({
      agents: {
        defaults: { workspace: path.join(root, "main-ws") },
        list: [{ id: "main" }, { id: "r", workspace: path.join(root, "r-ws") }, { id: "s" }],
      },
    });
    expect((await h.rt.workspaceFor("main")).dir).toBe(path.join(root, "main-ws"));
    expect((await h.rt.workspaceFor("r")).dir).toBe(path.join(root, "r-ws"));
    const sandboxed = runtime({ agents: { defaults: { sandbox: { workspaceRoot: path.join(root, "box") } } } });
    expect((await sandboxed.rt.workspaceFor("main")).dir).toBe(path.join(root, "box", "main"));
  });

  it("agents.defaults.maxConcurrent is the global lane's concurrency", async () => {
    const h = runtime({ agents: { defaults: { maxConcurrent: 3 } } });
    const slot = await h.rt.lanes.acquire("main");
    expect(h.rt.lanes.snapshot("main")?.concurrency).toBe(3);
    slot.release();
  });

  it("$schema is accepted and changes nothing (it is for editors)", () => {
    expect(parseConfig({ $schema: "https://example.test/loopgate.schema.json" })).toEqual({
      ...parseConfig({}),
      $schema: "https://example.test/loopgate.schema.json",
    });
  });
});

describe("runs", () => {
  it("model requests: thinkingDefault, maxSteps, a model's maxTokens and reasoning: false", async () => {
    const providers = {
      p: { api: "scripted", models: [{ id: "m", maxTokens: 777 }] },
      a: { api: "scripted", models: [{ id: "plain", reasoning: false }] },
    };
    const h = runtime(
      {
        agents: { defaults: { model: { primary: "b/m" }, thinkingDefault: "high", maxSteps: 2 } },
        models: { providers: { ...providers, b: { api: "scripted", models: [{ id: "m", maxTokens: 777 }] } } },
      },
      () => ({ toolCalls: [{ name: "no_such_tool" }] }),
    );
    const { final } = await h.run();
    expect(h.requests.map((r) => r.req.thinking)).toEqual(["high", "high"]);
    expect(h.requests[0].req.maxTokens).toBe(777);
    expect(h.requests).toHaveLength(2); // maxSteps: 2 model calls, then the loop stops
    expect(final.stopReason).toBe("max_steps");
    await h.run({ model: "a/plain" });
    expect(h.requests.at(-1)?.req.thinking).toBe("off"); // reasoning: false
  });
});

describe("runs and providers", () => {
  it("session.writeLock.acquireTimeoutMs and agents.defaults.timeoutSeconds reach the run", async () => {
    let lockSeen: { maxHoldMs?: number } = {};
    const peek: Tool = {
      name: "peek_lock",
      description: "reads the session lock file",
      concurrency: "sequential",
      parameters: { type: "object", properties: {} },
      execute: async () => {
        lockSeen = JSON.parse(fs.readFileSync(h.rt.sessionLockPath("agent:main:main"), "utf8"));
        return { content: "ok" };
      },
    };
    const h = runtime(
      {
        agents: { defaults: { model: { primary: "a/m" }, timeoutSeconds: 7 } },
        session: { writeLock: { acquireTimeoutMs: 30 } },
      },
      (req) => (req.messages.at(-1)?.role === "user" ? { toolCalls: [{ name: "peek_lock" }] } : { text: "done" }),
      [peek],
    );
    await h.run();
    expect(lockSeen.maxHoldMs).toBe(resolveMaxHoldMs(7000)); // the hold bound follows the run timeout

    // a lock held by another live process (this test's parent): the run gives up after acquireTimeoutMs
    const lockPath = h.rt.sessionLockPath("agent:main:main");
    const holder = {
      pid: process.ppid,
      starttime: readProcessStartTime(process.ppid) ?? null,
      createdAt: Date.now(),
      maxHoldMs: null,
    };
    // Another process takes a lock by creating a new file (this process may still keep its own for a moment after
    // the first run: session/write-lock.ts keepIdleMs), so the holder's file replaces ours rather than overwriting it.
    fs.rmSync(lockPath, { force: true });
    fs.writeFileSync(lockPath, JSON.stringify(holder));
    const { final } = await h.run();
    expect(final.status).toBe("error");
    expect(final.error).toContain("session is busy");
    fs.rmSync(lockPath);
  });

  it("providers: api, baseUrl, apiKey, headers, timeoutSeconds and models reach the provider", async () => {
    const server = await startFakeModelServer();
    try {
      const h = runtime({
        agents: { defaults: { model: { primary: "local/small" } } },
        models: {
          providers: {
            local: {
              api: "openai-completions",
              baseUrl: server.baseUrl,
              apiKey: "sk-from-config",
              headers: { "x-team": "blue" },
              timeoutSeconds: 30,
              models: [{ id: "small", contextWindow: 8000 }],
            },
          },
        },
      });
      server.enqueue({ text: "hello from the server" });
      const { final } = await h.run();
      expect(final.status, final.error).toBe("ok");
      const sent = server.requests.at(-1);
      expect(sent?.headers.authorization).toBe("Bearer sk-from-config");
      expect(sent?.headers["x-team"]).toBe("blue");
      expect(h.rt.resolveModel("local/small")).toMatchObject({ timeoutSeconds: 30, model: { contextWindow: 8000 } });
      // contextWindow bounds what a run may send: a message far beyond 8000 tokens is cut to head + tail, not sent whole
      server.enqueue({ text: "read the ends" });
      const big = await h.service.accept({ message: "word ".repeat(20000), idempotencyKey: "big" });
      const bigFinal = await h.service.final(big.runId);
      expect(bigFinal.status, bigFinal.error).toBe("ok");
      const body = JSON.stringify(server.requests.at(-1)?.body);
      expect(body).toContain("characters cut from the middle");
      expect(body.length / 4).toBeLessThan(8000);
    } finally {
      await server.close();
    }
  });

  it("skills.dirs, hooks.dirs and plugins.load.paths are resolved against the config file", () => {
    const dir = tmp();
    const file = path.join(dir, "conf", "loopgate.json5");
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, '{ skills: { dirs: ["s"] }, hooks: { dirs: ["h"] }, plugins: { load: { paths: ["p"] } } }');
    const { config } = loadConfig({ configPath: file, env: { LOOPGATE_STATE_DIR: dir } });
    expect(config.skills.dirs).toEqual([path.join(dir, "conf", "s")]);
    expect(config.hooks.dirs).toEqual([path.join(dir, "conf", "h")]);
    expect(config.plugins.load.paths).toEqual([path.join(dir, "conf", "p")]);
  });
});
