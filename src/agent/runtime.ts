import { readdir } from "node:fs/promises";
import path from "node:path";
import { defaultAgentId } from "../config/agents.js";
import type { LoopgateConfig } from "../config/index.js";
import { type AuthProfiles, authProfilesFor } from "../credentials/index.js";
import type { EventBusPort } from "../events/bus-port.js";
import { RunEventWriter } from "../events/run-event-writer.js";
import { discoverInternalHooks, InternalHookRegistry, registerInternalHooksFromConfig } from "../hooks/internal.js";
import type { HookLogger } from "../hooks/logger.js";
import { PluginHookRunner } from "../hooks/plugin-hooks.js";
import type { PluginLoadReport } from "../hooks/plugins.js";
import { type Beat, Cadence } from "../infra/cadence.js";
import { type Clock, systemClock } from "../infra/clock.js";
import { createLogger, type Logger } from "../infra/logger.js";
import { SessionEvents } from "../infra/session-events.js";
import type { Spender } from "../limits/budgets.js";
import type { SpendControl } from "../limits/spend-control.js";
import { BootstrapCache } from "../prompt/bootstrap-cache.js";
import { agentWorkspaceDir, ensureWorkspace } from "../prompt/workspace.js";
import { isPrivateNetworkBaseUrl } from "../providers/loopback.js";
import { createProvider, isSelfHostedBaseUrl, type ResolvedModel, resolveModelRef } from "../providers/registry.js";
import type { ModelProvider, Usage } from "../providers/types.js";
import { LaneScheduler, type LaneWaitInfo, laneConcurrencyFrom } from "../queue/lanes.js";
import { sessionLockFile } from "../session/file-lock.js";
import { SessionLifecycle } from "../session/lifecycle.js";
import type { SessionLockPort } from "../session/lock-port.js";
import type { Store } from "../storage/types.js";
import { createBuiltinTools } from "../tools/builtin.js";
import type { ExecSecurity } from "../tools/exec-policy.js";
import type { McpServerStatus } from "../tools/mcp/connection.js";
import { ToolRegistry } from "../tools/registry.js";
import { Sandboxes } from "../tools/sandbox/sandboxes.js";
import type { RunSandbox } from "../tools/sandbox/types.js";
import { type ToolSource, toolsOfSource } from "../tools/source.js";
import type { Tool } from "../tools/types.js";
import { EnabledOverrides, type EnabledSwitches } from "./enabled-overrides.js";
import { ExecApprovals, type ExecPrompt } from "./exec-approvals.js";
import { HistoryCache } from "./history-cache.js";
import { StoredAllowAlways } from "./stored-allow-always.js";
import { StoredEnabledSwitches } from "./stored-switches.js";

/** Hears a run's model calls start and end; must not throw. */
export interface ModelCallObserver {
  started(runId: string, sessionKey: string): void;
  ended(runId: string, sessionKey: string): void;
}

/**
 * Measures every model call that reaches a provider (retries, fallbacks and compaction summaries included): `start`
 * is called as the call begins and returns what hears how it ended. Must not throw. Unset, calls are not wrapped.
 */
export interface ModelCallMeter {
  start(model: ResolvedModel): (end: ModelCallEnd) => void;
}

/** How a model call ended: `ok`, a provider error kind (`rate_limit`, `timeout`, …), or `aborted` / `incomplete`. */
export interface ModelCallEnd {
  outcome: string;
  /** the usage the call reported (absent when it failed before reporting any) */
  usage?: Usage;
}

export interface RuntimeOptions {
  config: LoopgateConfig;
  stateDir: string;
  store: Store;
  /** the event bus port, chosen by the composition root (src/node/) with the store: in-process, or across nodes */
  bus: EventBusPort;
  /** session ownership, chosen with the store: the file write lock under stateDir (SPEC 3), or the cluster's leases */
  sessionLocks: SessionLockPort;
  /** the backend's rule for a store error worth retrying (the run-event writer retries it instead of dropping) */
  isTransientStoreError: (err: unknown) => boolean;
  clock?: Clock;
  logger?: Logger;
  /** Provider instances by provider id; they win over config (tests, embedding apps). */
  providers?: Record<string, ModelProvider>;
  /** Extra tools beside the built-ins. */
  tools?: Tool[];
  env?: NodeJS.ProcessEnv;
  /** Id source for run ids when the caller gives none. */
  newId?: () => string;
  /** tools.exec.security when the config does not set it. Default "allowlist"; the CLI's own runs pass "full". */
  execSecurityDefault?: ExecSecurity;
  /** Exec approvals are asked here (the CLI's terminal) instead of waiting for a gateway operator. */
  execPrompt?: ExecPrompt;
  /**
   * Tool sources besides the registry (built-ins and plugins), asked for their tools at every run's prepare. Whoever
   * composes the process creates them and closes them; the runtime only reads them.
   */
  toolSources?: ToolSource[];
  /** The MCP servers' health (`McpToolSource.status`), for `health`, `mcp.status` and the console. */
  mcpStatus?: () => McpServerStatus[];
  /** The auth profiles runs choose keys from (credentials/); default: from config, health in `store` */
  authProfiles?: AuthProfiles;
  /** The process's sandboxes, checked by whoever composed it (src/node/); default: unchecked ones over the config. */
  sandboxes?: Sandboxes;
  /** Spend control (limits/): budgets before every model call and the cost ledger; the composition root builds it. */
  spend?: SpendControl;
  /** Measures model calls (the gateway's /metrics, when gateway.metrics.enabled); absent: calls are not wrapped. */
  modelCallMeter?: ModelCallMeter;
}

/**
 * Everything a run needs that outlives a run: config, store, the one event bus, lanes, provider instances,
 * tools and resolved workspaces. One per process (the gateway, or the CLI in --local mode), built by src/node/,
 * which picks its store, bus and session locks; the runtime owns the run-event writer and closes it in `close()`.
 */
export class AgentRuntime {
  /** the config as it is now: `applyConfig` replaces it (a reload); a run reads its profile's copy (RunProfile.config) */
  private current: LoopgateConfig;
  readonly stateDir: string;
  readonly store: Store;
  readonly bus: EventBusPort;
  /** who may write a session's transcript: every run, reset and delete acquires the session here */
  readonly sessionLocks: SessionLockPort;
  readonly clock: Clock;
  /**
   * The beat runs pace their streams on (infra/cadence.ts; a run's view is `streamBeat.lane(runId)`): its provider
   * and its delta coalescer hand deltas on once per beat, and the gateway's chat deltas go with them; undefined when
   * `agents.defaults.streamCoalesceMs` is 0 (every model chunk is its own event).
   */
  readonly streamBeat: Cadence | undefined;
  readonly logger: Logger;
  readonly lanes: LaneScheduler;
  readonly env: NodeJS.ProcessEnv;
  /** the tools.exec policy and the approvals runs wait for */
  readonly execApprovals: ExecApprovals;
  /** skills and plugins an operator switched on or off (skills.update, plugins.setEnabled) */
  readonly enabledOverrides: EnabledSwitches;
  /** what init loaded, and which plugins it left out (disabled) or could not load; set once init ran */
  plugins: PluginLoadReport | undefined;
  /** the auth profiles (SPEC 23), rebuilt by `applyConfig` when `auth` or a provider changes, unless handed in */
  private profiles: AuthProfiles;
  private readonly ownProfiles: boolean;
  /**
   * tools.exec.env, the names the built-in exec passes through: the exec tool holds this array, so a reload changes
   * it in place
   */
  private readonly execEnvPassthrough: string[];
  private readonly providerInstances = new Map<string, Promise<ModelProvider>>();
  private readonly injectedProviders: Record<string, ModelProvider>;
  private readonly toolRegistry = new ToolRegistry();
  private readonly toolSources: readonly ToolSource[];
  /** warnings already logged (a tool clash or an allow list matching nothing would otherwise repeat every run) */
  private readonly warned = new Set<string>();
  /** the MCP servers' health when the process runs any (RuntimeOptions.mcpStatus) */
  readonly mcpStatus?: () => McpServerStatus[];
  private readonly workspaces = new Map<string, Promise<{ dir: string; created: boolean }>>();
  /** Plugin hooks (SPEC 6). `has()` lets every hook point cost nothing when no plugin listens. */
  readonly pluginHooks: PluginHookRunner;
  /** Internal (gateway) hooks: agent:bootstrap, command:*, gateway:*, message:*. */
  readonly internalHooks: InternalHookRegistry;
  readonly hookLogger: HookLogger;
  private initialized?: Promise<void>;
  /** Per-session history between turns (reads only new rows), bounded and evicted on idle by the runtime's clock. */
  readonly history: HistoryCache;
  /** session created / reset / deleted / patched, transcript messages appended (infra/session-events.ts) */
  readonly sessionEvents = new SessionEvents();
  /** stat-checked bootstrap files, per workspace */
  readonly bootstrap = new BootstrapCache();
  /** new / reset / delete of a session, for /new and /reset, the sessions.* methods and cron alike */
  readonly sessionLifecycle: SessionLifecycle;
  /** which sessions are sandboxed, their scopes' sandboxes (tools/sandbox/) */
  readonly sandboxes: Sandboxes;
  /**
   * Persists every event of the bus with its run seq (SPEC 15), in batches off the hot path. Closed by `close()`,
   * which the node calls before it closes the store.
   */
  readonly runEvents: RunEventWriter;
  /**
   * Told when a run's model call starts and ends (the stuck-session diagnostics: a silent model call is owned work,
   * not a stall). Unset, model calls are not wrapped at all.
   */
  modelCalls?: ModelCallObserver;
  /** budgets, run caps and the cost ledger (limits/); absent: model calls are not metered */
  readonly spend: SpendControl | undefined;
  /** counts and times model calls for /metrics; absent (metrics off): nothing is wrapped */
  readonly modelCallMeter: ModelCallMeter | undefined;

  constructor(opts: RuntimeOptions) {
    this.spend = opts.spend;
    this.modelCallMeter = opts.modelCallMeter;
    this.current = opts.config;
    this.stateDir = opts.stateDir;
    this.store = opts.store;
    this.clock = opts.clock ?? systemClock;
    this.history = new HistoryCache({ clock: this.clock });
    const coalesceMs = this.config.agents.defaults.streamCoalesceMs;
    // about one phase per 10 ms of the period: at the default 40 ms, four bursts a period of a quarter of the runs
    this.streamBeat =
      coalesceMs > 0 ? new Cadence(this.clock, coalesceMs, Math.max(1, Math.round(coalesceMs / 10))) : undefined;
    this.logger = opts.logger ?? createLogger();
    this.bus = opts.bus;
    this.env = opts.env ?? process.env;
    this.sessionLocks = opts.sessionLocks;
    this.injectedProviders = opts.providers ?? {};
    const maxConcurrent = this.config.agents.defaults.maxConcurrent;
    this.lanes = new LaneScheduler({
      concurrency: laneConcurrencyFrom({ main: maxConcurrent }),
      now: () => this.clock.now(),
      onWaitWarning: (info) => this.reportLaneWait(info),
    });
    // a fleet on Postgres shares the operators' answers and switches through the store; one node keeps its files
    const shared = this.store.kind === "postgres";
    this.execApprovals = new ExecApprovals({
      config: this.config.tools.exec,
      defaultSecurity: opts.execSecurityDefault ?? "allowlist",
      stateDir: this.stateDir,
      ...(shared ? { allowAlways: new StoredAllowAlways(this.store, this.clock, this.stateDir, this.logger) } : {}),
      clock: this.clock,
      logger: this.logger,
      prompt: opts.execPrompt,
    });
    this.enabledOverrides = shared
      ? new StoredEnabledSwitches(this.store, this.clock, this.stateDir, this.logger)
      : new EnabledOverrides(this.stateDir, this.logger);
    this.ownProfiles = opts.authProfiles === undefined;
    this.profiles = opts.authProfiles ?? this.profilesFor(this.config);
    this.toolSources = opts.toolSources ?? [];
    this.sandboxes =
      opts.sandboxes ??
      new Sandboxes({
        config: this.config,
        stateDir: this.stateDir,
        env: this.env,
        clock: this.clock,
        logger: this.logger,
      });
    this.mcpStatus = opts.mcpStatus;
    this.execEnvPassthrough = [...this.config.tools.exec.env];
    const builtins = createBuiltinTools({
      exec: { parentEnv: this.env, envPassthrough: this.execEnvPassthrough },
    });
    for (const tool of [...builtins, ...(opts.tools ?? [])]) this.registerTool(tool);
    const log = this.logger;
    this.hookLogger = { info: (m) => log.info(m), warn: (m) => log.warn(m), error: (m) => log.error(m) };
    this.pluginHooks = new PluginHookRunner({ logger: this.hookLogger, clock: this.clock });
    this.internalHooks = new InternalHookRegistry(this.hookLogger);
    this.runEvents = new RunEventWriter({
      store: this.store,
      clock: this.clock,
      logger: this.logger,
      isTransientStoreError: opts.isTransientStoreError,
    });
    this.runEvents.attach(this.bus);
    this.sessionLifecycle = new SessionLifecycle({
      store: this.store,
      locks: this.sessionLocks,
      hooks: this.pluginHooks,
      internalHooks: this.internalHooks,
      sessionEvents: this.sessionEvents,
      history: this.history,
      clock: this.clock,
      logger: this.hookLogger,
      ready: () => this.init(),
      // a /new or /reset starts a `scope: "session"` sandbox afresh
      sessionEnded: (sessionKey, agentId) => this.sandboxes.sessionEnded(agentId, sessionKey),
    });
  }

  get config(): LoopgateConfig {
    return this.current;
  }

  /** the auth profiles (SPEC 23): each run's profile gets a chooser of its keys (`forRun`) */
  get authProfiles(): AuthProfiles {
    return this.profiles;
  }

  private profilesFor(config: LoopgateConfig): AuthProfiles {
    return authProfilesFor(config, this.store, { clock: this.clock, logger: this.logger, env: this.env });
  }

  /**
   * A reloaded config (SPEC 26; node/live-config.ts calls it with the paths that changed, restart keys already
   * kept at their running values): from the next run on, runs resolve their profile from it. What was built from
   * the old one is rebuilt where it changed: provider instances whose entry changed are dropped (made again on next
   * use), the exec policy and env passthrough, the sandbox decisions, the auth profiles, spend limits, the main
   * lane's width and the agents' workspaces. A run already running keeps the profile it was prepared with.
   */
  applyConfig(next: LoopgateConfig, changed: readonly string[]): void {
    const prev = this.current;
    this.current = next;
    const touches = (prefix: string) => changed.some((p) => p === prefix || p.startsWith(`${prefix}.`));
    for (const id of new Set([...Object.keys(prev.models.providers), ...Object.keys(next.models.providers)])) {
      if (touches(`models.providers.${id}`)) this.providerInstances.delete(id);
    }
    if (touches("tools.exec")) {
      this.execApprovals.reconfigure(next.tools.exec);
      this.execEnvPassthrough.splice(0, this.execEnvPassthrough.length, ...next.tools.exec.env);
    }
    if (touches("agents")) {
      this.sandboxes.reconfigure(next);
      // a workspace path may have changed: resolved again on the next run (the folders stay as they are)
      this.workspaces.clear();
    }
    if (this.ownProfiles && (touches("auth") || touches("models.providers") || touches("agents.list"))) {
      this.profiles = this.profilesFor(next);
    }
    if (touches("limits")) this.spend?.reconfigure(next.limits);
    if (touches("agents.defaults.maxConcurrent")) this.lanes.setConcurrency("main", next.agents.defaults.maxConcurrent);
  }

  private closing?: Promise<void>;
  /**
   * Stops what the runtime owns: the run-event writer writes what it still buffers and detaches from the bus. The
   * store, bus and locks were given to it and are closed by their owner (src/node/) after this. Idempotent.
   */
  close(): Promise<void> {
    this.sandboxes.close();
    this.bootstrap.clear();
    this.closing ??= this.runEvents.close();
    return this.closing;
  }

  /**
   * Loads plugins (plugins.load.paths) and internal hooks (<workspace>/hooks, hooks.dirs, hooks.internal).
   * Idempotent. A broken plugin or hook is logged and skipped; it never stops the process from serving.
   */
  init(): Promise<void> {
    this.initialized ??= (async () => {
      const { plugins, hooks } = this.config;
      // Plugins installed with `loopgate plugins install` live in <stateDir>/plugins and load like listed ones.
      const installed = await listDirs(path.join(this.stateDir, "plugins"));
      const pluginPaths = [...plugins.load.paths, ...installed.filter((p) => !plugins.load.paths.includes(p))];
      if (pluginPaths.length > 0) {
        await this.enabledOverrides.refresh();
        // the plugin loader's module only for a process that has plugins (a one-shot CLI run mostly has none)
        const { loadPlugins } = await import("../hooks/plugins.js");
        this.plugins = await loadPlugins(
          { paths: pluginPaths, entries: this.pluginEntries() },
          {
            runner: this.pluginHooks,
            registerTool: (tool, pluginId) => this.registerTool(pluginTool(tool, pluginId)),
            logger: this.hookLogger,
          },
        );
      }
      const workspace = await this.workspaceFor(this.defaultAgentId);
      await discoverInternalHooks(
        [path.join(workspace.dir, "hooks"), ...hooks.dirs],
        this.internalHooks,
        this.hookLogger,
      );
      if (hooks.internal.length > 0) {
        await registerInternalHooksFromConfig(hooks.internal, this.internalHooks, this.hookLogger);
      }
    })();
    return this.initialized;
  }

  /** plugins.entries with the operator's switches (enabled-overrides.json) over the config's `enabled` */
  private pluginEntries(): LoopgateConfig["plugins"]["entries"] {
    const entries = { ...this.config.plugins.entries };
    for (const [id, enabled] of this.enabledOverrides.all("plugins")) entries[id] = { ...entries[id], enabled };
    return entries;
  }

  /** Fires an internal hook without blocking the caller; failures are logged by the registry. */
  fireInternal(type: string, action: string | undefined, context: Record<string, unknown>): Promise<unknown> {
    if (!this.internalHooks.has(type, action)) return Promise.resolve();
    return this.internalHooks.trigger({ type, action, context, messages: [] }).catch((err) => {
      this.logger.warn(`internal hook ${type}${action ? `:${action}` : ""}: ${(err as Error).message}`);
    });
  }

  /**
   * One line per lane per 10 s, with how many more entries waited meanwhile: under load hundreds of runs cross the
   * warning threshold together, and a line each would bury everything else in the log.
   */
  private readonly laneWarned = new Map<string, { at: number; suppressed: number }>();
  private reportLaneWait(info: LaneWaitInfo): void {
    const now = this.clock.now();
    const last = this.laneWarned.get(info.lane);
    if (last && now - last.at < 10_000) {
      last.suppressed++;
      return;
    }
    const more = last?.suppressed ? ` (+${last.suppressed} more waits since the last report)` : "";
    this.logger.warn(
      `lane ${info.lane}: ${info.label ?? "a run"} has waited ${info.waitedMs} ms (${info.queuedAhead} ahead, ${info.queuedBehind} behind, ${info.active} active)${more}`,
    );
    if (this.laneWarned.size > 1000) this.laneWarned.clear();
    this.laneWarned.set(info.lane, { at: now, suppressed: 0 });
  }

  /**
   * Adds a tool to every agent's set (before allow/deny). Throws when the name is invalid or taken, by a registered
   * tool or by one a tool source offers now (the error names both sources), or its schema cannot be compiled;
   * returns a function that removes it again.
   */
  registerTool(tool: Tool): () => void {
    const offered = this.sourceToolNamed(tool.name);
    if (offered) {
      throw new Error(
        `tool "${tool.name}"${tool.source ? ` from ${tool.source}` : ""} clashes with tool "${offered.name}" from ${offered.source ?? "a tool source"}`,
      );
    }
    return this.toolRegistry.register(tool);
  }

  private sourceToolNamed(name: string): Tool | undefined {
    for (const source of this.toolSources) {
      const found = source.tools(this.defaultAgentId).find((t) => t.name === name);
      if (found) return found;
    }
    return undefined;
  }

  /**
   * Every tool the agent could be given now, before its allow/deny lists: the registry's (built-ins, plugins), then
   * each tool source's for this agent. A source's tool whose name is already taken is left out and the clash logged
   * once, naming both sources (an MCP server connecting after a plugin registered the same name).
   */
  toolCatalog(agentId: string): Tool[] {
    const all = this.toolRegistry.list();
    // built only when a source offers a tool: a gateway's MCP slot with no server in it costs a run nothing
    let taken: Map<string, Tool> | undefined;
    for (const source of this.toolSources) {
      for (const tool of toolsOfSource(source, agentId)) {
        taken ??= new Map(all.map((t) => [t.name, t]));
        const existing = taken.get(tool.name);
        if (existing) {
          this.warnOnce(
            `tool "${tool.name}" from ${tool.source ?? `tool source "${source.id}"`} clashes with tool "${existing.name}" from ${existing.source ?? "the runtime"}; it is left out`,
          );
          continue;
        }
        taken.set(tool.name, tool);
        all.push(tool);
      }
    }
    return all;
  }

  /** The session's sandbox (ProfileSources): undefined when its runs are not sandboxed. */
  sandboxFor(agentId: string, sessionKey: string, workspaceDir: string): Promise<RunSandbox | undefined> {
    return this.sandboxes.forRun(agentId, sessionKey, workspaceDir);
  }

  /** Logs a warning the first time this process sees it. */
  /** The run's spend limits (its profile's `limits` slot); undefined without spend control. */
  runLimits(who: Spender) {
    return this.spend?.limitsFor(who);
  }

  warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    if (this.warned.size > 1000) this.warned.clear();
    this.warned.add(message);
    this.logger.warn(message);
  }

  /** Every registered tool, before any agent's allow/deny lists. */
  get tools(): ReadonlyMap<string, Tool> {
    return this.toolRegistry.byName;
  }

  resolveModel(ref: string | undefined): ResolvedModel {
    const providers = { ...this.config.models.providers };
    for (const id of Object.keys(this.injectedProviders)) {
      providers[id] ??= { api: this.injectedProviders[id].api, models: [] };
    }
    return resolveModelRef(providers, ref);
  }

  /**
   * Self-hosted models get the longer idle window (SPEC 13): `models.providers.<id>.selfHosted` says so (either
   * way); without it, a loopback, private-network or `.local` baseUrl, or the scripted api, counts as self-hosted.
   */
  isSelfHosted(model: ResolvedModel): boolean {
    if (model.selfHosted !== undefined) return model.selfHosted;
    return model.api === "scripted" || isSelfHostedBaseUrl(model.baseUrl);
  }

  /** An endpoint on this machine or a private network (by its baseUrl): it may turn the idle watchdog off. */
  onPrivateNetwork(model: ResolvedModel): boolean {
    return isPrivateNetworkBaseUrl(model.baseUrl);
  }

  /** The run's view of the stream beat: the phase its provider, its coalescer and its chat deltas pace on. */
  runBeat(runId: string): Beat | undefined {
    return this.streamBeat?.lane(runId);
  }

  /** Provider instances are created once per provider id and reused by every run. */
  getProvider(providerId: string): Promise<ModelProvider> {
    const injected = this.injectedProviders[providerId];
    if (injected) return Promise.resolve(injected);
    let p = this.providerInstances.get(providerId);
    if (!p) {
      const cfg = this.config.models.providers[providerId];
      if (!cfg) return Promise.reject(new Error(`unknown provider "${providerId}"`));
      p = createProvider(providerId, cfg);
      p.catch(() => this.providerInstances.delete(providerId));
      this.providerInstances.set(providerId, p);
    }
    return p;
  }

  /** `agents.list[].default`, else the first listed agent, else "main". */
  get defaultAgentId(): string {
    return defaultAgentId(this.config);
  }

  agentModelRef(agentId: string): string | undefined {
    const entry = this.config.agents.list.find((a) => a.id === agentId);
    const m = entry?.model;
    if (typeof m === "string") return m;
    return m?.primary ?? this.config.agents.defaults.model.primary;
  }

  /** Resolved and created once per agent (and sandbox root); file tools are confined to the returned real path. */
  workspaceFor(agentId: string, sandboxRoot?: string): Promise<{ dir: string; created: boolean }> {
    const cacheKey = `${agentId}\0${sandboxRoot ?? ""}`;
    let p = this.workspaces.get(cacheKey);
    if (!p) {
      const dir = agentWorkspaceDir(this.config, this.stateDir, agentId, sandboxRoot);
      p = ensureWorkspace(dir);
      p.catch(() => this.workspaces.delete(cacheKey));
      this.workspaces.set(cacheKey, p);
    }
    return p;
  }

  /** The session write lock file the default (file) SessionLockPort uses: beside the session data, one per key. */
  sessionLockPath(sessionKey: string): string {
    return sessionLockFile(this.stateDir, sessionKey);
  }
}

/**
 * A plugin's tool as the registry keeps it: labelled with the plugin (so a clash names it) and copied field by field,
 * since a plugin may pass a class instance whose methods a spread would lose.
 */
function pluginTool(tool: Tool, pluginId: string): Tool {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    argsSchema: tool.argsSchema,
    concurrency: tool.concurrency,
    source: `plugin "${pluginId}"`,
    execute: typeof tool.execute === "function" ? (args, ctx) => tool.execute(args, ctx) : tool.execute,
  };
}

async function listDirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith(".")).map((e) => path.join(dir, e.name));
  } catch {
    return [];
  }
}
