import { type Clock, systemClock } from "../infra/clock.js";
import { describeError, type HookLogger, isPlainObject } from "./logger.js";

/**
 * Plugin hooks: extension points inside the agent loop and the gateway pipeline. Plugins register handlers with a
 * priority; the runner calls them and folds their results into one decision per hook, with the rules of SPEC §6.
 * This runs on every turn and every tool call, so a hook nobody listens to costs one Map lookup.
 */

/** Hooks whose handlers run one after another (priority order), each with a timeout, and shape a decision. */
export const MODIFYING_PLUGIN_HOOKS = [
  "before_model_resolve",
  "before_prompt_build",
  "before_agent_start",
  "before_agent_reply",
  "before_tool_call",
  "before_install",
  "message_sending",
] as const;

/** Hooks that only watch: they run in parallel and cannot change anything the caller does. */
export const OBSERVER_PLUGIN_HOOKS = [
  "agent_end",
  "before_compaction",
  "after_compaction",
  "after_tool_call",
  "message_received",
  "message_sent",
  "session_start",
  "session_end",
  "gateway_start",
  "gateway_stop",
] as const;

export const PLUGIN_HOOK_NAMES = [...MODIFYING_PLUGIN_HOOKS, "tool_result_persist", ...OBSERVER_PLUGIN_HOOKS] as const;

export type PluginHookName = (typeof PLUGIN_HOOK_NAMES)[number];
export type ObserverHookName = (typeof OBSERVER_PLUGIN_HOOKS)[number];

const HOOK_NAME_SET: ReadonlySet<string> = new Set(PLUGIN_HOOK_NAMES);

export function isPluginHookName(name: unknown): name is PluginHookName {
  return typeof name === "string" && HOOK_NAME_SET.has(name);
}

export const DEFAULT_PLUGIN_HOOK_TIMEOUT_MS = 15_000;

// ---------------------------------------------------------------------------------------------------------------
// Events and results

/** Who the hook fires for; passed through to every handler so plugins can scope behaviour per agent/session. */
export interface PluginHookRunContext {
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  runId?: string;
  workspaceDir?: string;
  channel?: string;
}

export interface PluginHookHandlerContext extends PluginHookRunContext {
  pluginId: string;
}

/** Fired before the session exists, so there are no messages yet: only the incoming prompt. */
export interface BeforeModelResolveEvent {
  prompt: string;
}
export interface BeforeModelResolveResult {
  modelOverride?: string;
  providerOverride?: string;
}

export interface BeforePromptBuildEvent {
  prompt: string;
  messages: unknown[];
}
export interface BeforePromptBuildResult {
  /** Replaces the whole system prompt; the highest-priority plugin that sets it wins. */
  systemPrompt?: string;
  /** Dynamic per-turn text put before the user's prompt. */
  prependContext?: string;
  /** Stable guidance placed at the start / end of the system prompt. */
  prependSystemContext?: string;
  appendSystemContext?: string;
}

/** Legacy hook fired in both phases: `messages` is present only in the prompt-build phase. */
export interface BeforeAgentStartEvent {
  prompt: string;
  messages?: unknown[];
}
export type BeforeAgentStartResult = BeforeModelResolveResult & BeforePromptBuildResult;

export interface BeforeAgentReplyEvent {
  prompt: string;
  messages?: unknown[];
}
export interface BeforeAgentReplyResult {
  handled?: boolean;
  /** The synthetic reply; absent means the turn ends silently. */
  reply?: string;
}

export interface BeforeToolCallEvent {
  toolName: string;
  params: Record<string, unknown>;
  toolCallId?: string;
}
export interface BeforeToolCallResult {
  params?: Record<string, unknown>;
  block?: boolean;
  blockReason?: string;
}

export interface InstallFinding {
  message: string;
  severity?: "info" | "warn" | "critical";
  file?: string;
  ruleId?: string;
  /** Filled in by the runner: which plugin reported it. */
  pluginId?: string;
}
export interface BeforeInstallEvent {
  kind: "skill" | "plugin";
  name: string;
  /** Where the material came from (directory path or npm spec). */
  source: string;
  sourceType: "dir" | "npm";
  /** The staged copy a scanner may read; it is not installed yet. */
  stagedPath: string;
  mode: "install" | "update";
}
export interface BeforeInstallResult {
  block?: boolean;
  blockReason?: string;
  findings?: InstallFinding[];
}

export interface MessageSendingEvent {
  content: string;
  to?: string;
  channel?: string;
}
export interface MessageSendingResult {
  content?: string;
  cancel?: boolean;
}

export interface ToolResultPersistEvent<M = unknown> {
  message: M;
  toolName?: string;
  toolCallId?: string;
}
export interface ToolResultPersistResult<M = unknown> {
  message?: M;
}

export interface AgentEndEvent {
  messages: unknown[];
  success: boolean;
  error?: string;
  durationMs?: number;
}
export interface CompactionEvent {
  messageCount?: number;
  tokenCount?: number;
  compactedCount?: number;
  summary?: string;
}
export interface AfterToolCallEvent {
  toolName: string;
  params: Record<string, unknown>;
  toolCallId?: string;
  result?: unknown;
  error?: string;
  durationMs?: number;
}
export interface MessageEvent {
  content: string;
  from?: string;
  to?: string;
  channel?: string;
  success?: boolean;
  error?: string;
}
export interface SessionBoundaryEvent {
  sessionKey: string;
  sessionId?: string;
  reason?: string;
  /** the transcript generation that ends (session_end) or begins (session_start); the session id outlives a reset */
  generation?: number;
}
export interface GatewayLifecycleEvent {
  port?: number;
  reason?: string;
}

export interface PluginHookEventMap {
  before_model_resolve: BeforeModelResolveEvent;
  before_prompt_build: BeforePromptBuildEvent;
  before_agent_start: BeforeAgentStartEvent;
  before_agent_reply: BeforeAgentReplyEvent;
  before_tool_call: BeforeToolCallEvent;
  before_install: BeforeInstallEvent;
  message_sending: MessageSendingEvent;
  tool_result_persist: ToolResultPersistEvent;
  agent_end: AgentEndEvent;
  before_compaction: CompactionEvent;
  after_compaction: CompactionEvent;
  after_tool_call: AfterToolCallEvent;
  message_received: MessageEvent;
  message_sent: MessageEvent;
  session_start: SessionBoundaryEvent;
  session_end: SessionBoundaryEvent;
  gateway_start: GatewayLifecycleEvent;
  gateway_stop: GatewayLifecycleEvent;
}

/** What each deciding hook may return; observers return nothing. */
export interface PluginHookResultMap {
  before_model_resolve: BeforeModelResolveResult;
  before_prompt_build: BeforePromptBuildResult;
  before_agent_start: BeforeAgentStartResult;
  before_agent_reply: BeforeAgentReplyResult;
  before_tool_call: BeforeToolCallResult;
  before_install: BeforeInstallResult;
  message_sending: MessageSendingResult;
  tool_result_persist: ToolResultPersistResult;
}

/** `tool_result_persist` is on the transcript write path and must answer synchronously; all others may await. */
export type PluginHookHandler<K extends PluginHookName> = (
  event: PluginHookEventMap[K],
  ctx: PluginHookHandlerContext,
) => K extends keyof PluginHookResultMap
  ? K extends "tool_result_persist"
    ? PluginHookResultMap[K] | undefined
    : PluginHookResultMap[K] | undefined | Promise<PluginHookResultMap[K] | undefined>
  : void | Promise<void>;

export interface PluginHookOptions {
  pluginId: string;
  /** Higher runs first; equal priorities run in registration order. Default 0. */
  priority?: number;
  /** Per-handler budget for async hooks; 0 or Infinity disables it. Default 15000. */
  timeoutMs?: number;
}

// Decisions returned by the run methods: always complete objects, so callers never re-derive defaults.

export interface ToolCallDecision {
  params: Record<string, unknown>;
  block: boolean;
  blockReason?: string;
  blockedBy?: string;
}
export interface InstallDecision {
  block: boolean;
  blockReason?: string;
  blockedBy?: string;
  findings: InstallFinding[];
}
export interface AgentReplyClaim {
  handled: true;
  reply?: string;
  pluginId: string;
}
export interface MessageSendingDecision {
  content: string;
  cancel: boolean;
  cancelledBy?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Merge / decision rules: one fold per hook kind. A fold sees one handler's result (already checked to be an
// object), updates the running decision, and returns true when the decision is terminal.

type Fold<S> = (state: S, result: Record<string, unknown>, pluginId: string) => boolean;

/** "first": the highest-priority defined value wins. "concat": every value, in priority order, blank-line joined. */
type FieldRule = "first" | "concat";

const MODEL_RESOLVE_FIELDS: Record<keyof BeforeModelResolveResult, FieldRule> = {
  modelOverride: "first",
  providerOverride: "first",
};

const PROMPT_BUILD_FIELDS: Record<keyof BeforePromptBuildResult, FieldRule> = {
  systemPrompt: "first",
  prependContext: "concat",
  prependSystemContext: "concat",
  appendSystemContext: "concat",
};

/** The prompt/model results are flat string records, so their rules are plain data applied by one fold. */
type StringFields = Record<string, string | undefined>;

function fieldFold(rules: Record<string, FieldRule>): Fold<StringFields> {
  const entries = Object.entries(rules);
  return (state, result) => {
    for (const [field, rule] of entries) {
      const value = result[field];
      if (typeof value !== "string") continue;
      const previous = state[field];
      if (rule === "first") {
        if (previous === undefined) state[field] = value;
      } else if (value !== "") {
        // Empty strings are skipped so they cannot leave stray blank lines in the prompt.
        state[field] = previous === undefined ? value : `${previous}\n\n${value}`;
      }
    }
    return false;
  };
}

const foldModelResolve = fieldFold(MODEL_RESOLVE_FIELDS);
const foldPromptBuild = fieldFold(PROMPT_BUILD_FIELDS);

/** `handled: true` claims the turn; anything else leaves it to lower priorities and the model. */
function foldAgentReply(state: { claim?: AgentReplyClaim }, result: Record<string, unknown>, pluginId: string) {
  if (result.handled !== true) return false;
  state.claim = { handled: true, pluginId };
  if (typeof result.reply === "string") state.claim.reply = result.reply;
  return true;
}

/** `params` replace for later handlers and the tool; `block: true` is final; `block: false` is a no-op. */
function foldToolCall(state: ToolCallDecision, result: Record<string, unknown>, pluginId: string) {
  if (isPlainObject(result.params)) state.params = result.params;
  if (result.block !== true) return false;
  state.block = true;
  state.blockedBy = pluginId;
  if (typeof result.blockReason === "string") state.blockReason = result.blockReason;
  return true;
}

/** Findings accumulate from every handler that ran (the blocking one included); blocking as for tool calls. */
function foldInstall(state: InstallDecision, result: Record<string, unknown>, pluginId: string) {
  if (Array.isArray(result.findings)) {
    for (const finding of result.findings) {
      if (isPlainObject(finding) && typeof finding.message === "string") {
        state.findings.push({ ...(finding as unknown as InstallFinding), pluginId });
      }
    }
  }
  if (result.block !== true) return false;
  state.block = true;
  state.blockedBy = pluginId;
  if (typeof result.blockReason === "string") state.blockReason = result.blockReason;
  return true;
}

/** `content` replaces for later handlers and the channel; `cancel: true` is final; `cancel: false` is a no-op. */
function foldMessageSending(state: MessageSendingDecision, result: Record<string, unknown>, pluginId: string) {
  if (typeof result.content === "string") state.content = result.content;
  if (result.cancel !== true) return false;
  state.cancel = true;
  state.cancelledBy = pluginId;
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Runner

interface Registration {
  hookName: PluginHookName;
  pluginId: string;
  priority: number;
  timeoutMs: number;
  /** Global registration counter: breaks priority ties when two hooks' lists are merged (legacy hook). */
  seq: number;
  handler: (event: unknown, ctx: PluginHookHandlerContext) => unknown;
}

type Outcome = { ok: true; value: unknown } | { ok: false };
const SKIPPED: Outcome = { ok: false };

export interface PluginHookRunnerOptions {
  logger: HookLogger;
  clock?: Clock;
  defaultTimeoutMs?: number;
}

export class PluginHookRunner {
  /** Per hook, kept sorted (priority desc, then registration order) at insert time so runs never sort. */
  private readonly hooks = new Map<PluginHookName, Registration[]>();
  private seq = 0;
  private readonly logger: HookLogger;
  private readonly clock: Clock;
  private readonly defaultTimeoutMs: number;

  constructor(opts: PluginHookRunnerOptions) {
    this.logger = opts.logger;
    this.clock = opts.clock ?? systemClock;
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? DEFAULT_PLUGIN_HOOK_TIMEOUT_MS;
  }

  /** Registers a handler; returns a function that removes exactly this registration. */
  on<K extends PluginHookName>(hookName: K, handler: PluginHookHandler<K>, opts: PluginHookOptions): () => void {
    if (!isPluginHookName(hookName)) {
      throw new TypeError(`plugin "${opts.pluginId}": unknown hook "${String(hookName)}"`);
    }
    if (typeof handler !== "function") {
      throw new TypeError(`plugin "${opts.pluginId}": handler for ${hookName} is not a function`);
    }
    const registration: Registration = {
      hookName,
      pluginId: opts.pluginId,
      priority: Number.isFinite(opts.priority) ? (opts.priority as number) : 0,
      timeoutMs: opts.timeoutMs ?? this.defaultTimeoutMs,
      seq: this.seq++,
      handler: handler as Registration["handler"],
    };
    const list = this.hooks.get(hookName) ?? [];
    let at = list.length;
    while (at > 0 && list[at - 1].priority < registration.priority) at--;
    list.splice(at, 0, registration);
    this.hooks.set(hookName, list);
    return () => {
      const current = this.hooks.get(hookName);
      const index = current ? current.indexOf(registration) : -1;
      if (index === -1 || !current) return;
      current.splice(index, 1);
      if (current.length === 0) this.hooks.delete(hookName);
    };
  }

  /**
   * True when running this hook would call at least one handler, so callers can skip building the event.
   * The model-resolve and prompt-build phases also answer for the legacy `before_agent_start` they include.
   */
  has(hookName: PluginHookName): boolean {
    if (this.hooks.has(hookName)) return true;
    return (
      (hookName === "before_model_resolve" || hookName === "before_prompt_build") &&
      this.hooks.has("before_agent_start")
    );
  }

  async runBeforeModelResolve(
    event: BeforeModelResolveEvent,
    ctx: PluginHookRunContext = {},
  ): Promise<BeforeModelResolveResult> {
    const state: StringFields = {};
    const handlers = this.ordered("before_model_resolve", "before_agent_start");
    await this.runSequential(handlers, ctx, state, () => event, foldModelResolve);
    return state as BeforeModelResolveResult;
  }

  async runBeforePromptBuild(
    event: BeforePromptBuildEvent,
    ctx: PluginHookRunContext = {},
  ): Promise<BeforePromptBuildResult> {
    const state: StringFields = {};
    const handlers = this.ordered("before_prompt_build", "before_agent_start");
    await this.runSequential(handlers, ctx, state, () => event, foldPromptBuild);
    return state as BeforePromptBuildResult;
  }

  /** Resolves to the claim of the plugin that took the turn, or undefined when the model should answer. */
  async runBeforeAgentReply(
    event: BeforeAgentReplyEvent,
    ctx: PluginHookRunContext = {},
  ): Promise<AgentReplyClaim | undefined> {
    const state: { claim?: AgentReplyClaim } = {};
    await this.runSequential(this.ordered("before_agent_reply"), ctx, state, () => event, foldAgentReply);
    return state.claim;
  }

  async runBeforeToolCall(event: BeforeToolCallEvent, ctx: PluginHookRunContext = {}): Promise<ToolCallDecision> {
    const state: ToolCallDecision = { params: event.params, block: false };
    // Each handler sees the params as replaced by the handlers before it.
    const view = (s: ToolCallDecision): BeforeToolCallEvent => ({ ...event, params: s.params });
    await this.runSequential(this.ordered("before_tool_call"), ctx, state, view, foldToolCall);
    return state;
  }

  async runBeforeInstall(event: BeforeInstallEvent, ctx: PluginHookRunContext = {}): Promise<InstallDecision> {
    const state: InstallDecision = { block: false, findings: [] };
    await this.runSequential(this.ordered("before_install"), ctx, state, () => event, foldInstall);
    return state;
  }

  async runMessageSending(event: MessageSendingEvent, ctx: PluginHookRunContext = {}): Promise<MessageSendingDecision> {
    const state: MessageSendingDecision = { content: event.content, cancel: false };
    const view = (s: MessageSendingDecision): MessageSendingEvent => ({ ...event, content: s.content });
    await this.runSequential(this.ordered("message_sending"), ctx, state, view, foldMessageSending);
    return state;
  }

  /**
   * Synchronous: it sits on the transcript write path. Each handler may return `{ message }` to replace what is
   * persisted (later handlers see the replacement). A handler that returns a Promise is a bug in that plugin: its
   * value would arrive after the write, so it is ignored, with a warning naming the plugin.
   */
  runToolResultPersist<M>(event: ToolResultPersistEvent<M>, ctx: PluginHookRunContext = {}): M {
    const list = this.hooks.get("tool_result_persist");
    if (!list) return event.message;
    let message = event.message;
    for (const registration of [...list]) {
      let returned: unknown;
      try {
        returned = registration.handler({ ...event, message }, { ...ctx, pluginId: registration.pluginId });
      } catch (err) {
        this.logFailure(registration, err);
        continue;
      }
      if (isThenable(returned)) {
        // Swallow its eventual rejection too: nobody awaits it, and an unhandled rejection would crash the host.
        returned.then(undefined, () => {});
        this.logger.warn(
          `plugin "${registration.pluginId}" hook tool_result_persist returned a Promise; it must be synchronous, result ignored`,
          { plugin: registration.pluginId, hook: "tool_result_persist" },
        );
        continue;
      }
      if (isPlainObject(returned) && returned.message !== undefined) message = returned.message as M;
    }
    return message;
  }

  /**
   * Runs every observer at once and waits for all of them (each within its timeout). Failures are logged with the
   * plugin id and never reach the caller: an observer cannot break a turn.
   */
  async runObservers<K extends ObserverHookName>(
    hookName: K,
    event: PluginHookEventMap[K],
    ctx: PluginHookRunContext = {},
  ): Promise<void> {
    const list = this.hooks.get(hookName);
    if (!list) return;
    await Promise.all(list.map((registration) => this.invoke(registration, event, ctx)));
  }

  // -------------------------------------------------------------------------------------------------------------

  /** A snapshot of the handlers to run, so (un)registering during a run does not shift it. */
  private ordered(name: PluginHookName, legacy?: PluginHookName): Registration[] {
    const main = this.hooks.get(name);
    const extra = legacy === undefined ? undefined : this.hooks.get(legacy);
    if (!extra) return main ? [...main] : [];
    if (!main) return [...extra];
    return [...main, ...extra].sort((a, b) => b.priority - a.priority || a.seq - b.seq);
  }

  private async runSequential<E, S>(
    registrations: Registration[],
    ctx: PluginHookRunContext,
    state: S,
    view: (state: S) => E,
    fold: Fold<S>,
  ): Promise<void> {
    for (const registration of registrations) {
      const outcome = await this.invoke(registration, view(state), ctx);
      if (!outcome.ok || outcome.value === undefined || outcome.value === null) continue;
      if (!isPlainObject(outcome.value)) {
        this.logger.warn(
          `plugin "${registration.pluginId}" hook ${registration.hookName} returned a ${typeof outcome.value}, not an object; ignored`,
          { plugin: registration.pluginId, hook: registration.hookName },
        );
        continue;
      }
      if (fold(state, outcome.value, registration.pluginId)) return;
    }
  }

  /** Calls one handler; never throws or rejects. A failure or a timeout is logged and reported as skipped. */
  private invoke(registration: Registration, event: unknown, ctx: PluginHookRunContext): Outcome | Promise<Outcome> {
    let returned: unknown;
    try {
      returned = registration.handler(event, { ...ctx, pluginId: registration.pluginId });
    } catch (err) {
      this.logFailure(registration, err);
      return SKIPPED;
    }
    if (!isThenable(returned)) return { ok: true, value: returned };
    return this.settleWithin(registration, returned);
  }

  private settleWithin(registration: Registration, pending: PromiseLike<unknown>): Promise<Outcome> {
    const { timeoutMs, pluginId, hookName } = registration;
    return new Promise<Outcome>((resolve) => {
      let done = false;
      let timer: unknown;
      if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
        timer = this.clock.setTimeout(() => {
          if (done) return;
          done = true;
          this.logger.warn(`plugin "${pluginId}" hook ${hookName} timed out after ${timeoutMs}ms; skipped`, {
            plugin: pluginId,
            hook: hookName,
            timeoutMs,
          });
          resolve(SKIPPED);
        }, timeoutMs);
      }
      // After a timeout the handler may still settle; its value is dropped and a late rejection is absorbed here.
      pending.then(
        (value) => {
          if (done) return;
          done = true;
          if (timer !== undefined) this.clock.clearTimeout(timer);
          resolve({ ok: true, value });
        },
        (err) => {
          if (done) return;
          done = true;
          if (timer !== undefined) this.clock.clearTimeout(timer);
          this.logFailure(registration, err);
          resolve(SKIPPED);
        },
      );
    });
  }

  private logFailure(registration: Registration, err: unknown): void {
    this.logger.error(`plugin "${registration.pluginId}" hook ${registration.hookName} failed: ${describeError(err)}`, {
      plugin: registration.pluginId,
      hook: registration.hookName,
    });
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}
