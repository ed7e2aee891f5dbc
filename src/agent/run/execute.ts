import type { ResolvedModel } from "../../providers/registry.js";
import { addUsage, type ChatMessage, emptyUsage, ProviderError, type Usage } from "../../providers/types.js";
import type { LoopOutcome, LoopPorts } from "../loop.js";
import { type AttemptInput, runAttempt } from "./attempt.js";
import type { CompactionResult } from "./compaction.js";
import { CompactionFailedError } from "./context-guard.js";
import { errorKind } from "./errors.js";
import type { RunEmitter } from "./events.js";
import { runWithFallback } from "./fallback.js";
import { retryPolicyFor, withModelRetries } from "./model-retry.js";
import type { RunPorts } from "./ports.js";
import type { PreparedRun, TurnChoices } from "./prepare.js";
import type { RunProjection } from "./projection.js";
import type { RunSpans } from "./spans.js";
import type { RunSpec } from "./spec.js";

/** How the execute phase ended; finish classifies it. */
export type ExecuteResult =
  /** a plugin answered (or silenced) the turn before the model was called */
  | { kind: "claimed"; text: string; pluginId?: string }
  /** a command ran instead of the model (`/compact`) */
  | { kind: "command"; text: string }
  /** the loop ran; `model` is the one that produced the last outcome (after any fallback) */
  | { kind: "loop"; outcome: LoopOutcome; model: string; usage: Usage };

/** The context window port of the attempt loop: compaction before each call and after an overflow. */
export interface ContextGuard {
  /** the loop's transformContext for one model (checks the budget before every call, compacts when needed) */
  transformFor(model: ResolvedModel): NonNullable<LoopPorts["transformContext"]>;
  /** the provider said the context is too long: compact and return the new context, or throw (context_length) */
  afterOverflow(messages: ChatMessage[], model: ResolvedModel): Promise<ChatMessage[]>;
  /** `/compact`: compact now whatever the size */
  compactNow(messages: ChatMessage[], model: ResolvedModel, instructions?: string): Promise<CompactionResult>;
}

export interface ExecuteContext {
  rt: RunPorts;
  spec: RunSpec;
  prepared: PreparedRun;
  choices: TurnChoices;
  signal: AbortSignal;
  events: RunEmitter;
  projection: RunProjection;
  context?: ContextGuard;
  /** the run's spans (SPEC 20); absent when tracing is off */
  spans?: RunSpans;
}

/** Execute: the user's message goes down, a plugin may claim the turn, else the attempt loop runs the model. */
export async function executeRun(ctx: ExecuteContext): Promise<ExecuteResult> {
  if (ctx.choices.compact) return compactCommand(ctx, ctx.choices.compact.instructions);
  ctx.projection.write(ctx.prepared.userMessage, ctx.prepared.modelUserMessage);
  // the user's row is stored before anything else happens: a store that cannot write fails the run here
  await ctx.projection.flushed();
  const claimed = await claimByPlugin(ctx);
  if (claimed) return claimed;
  return attemptLoop(ctx, [...ctx.prepared.history, ctx.prepared.modelUserMessage]);
}

/** `/compact [instructions]`: the history is compacted now; the reply says what happened. */
async function compactCommand(ctx: ExecuteContext, instructions?: string): Promise<ExecuteResult> {
  if (!ctx.context) return { kind: "command", text: "Compaction is not available here." };
  const result = await ctx.context.compactNow(ctx.prepared.history, ctx.prepared.model, instructions);
  const n = (x: number) => x.toLocaleString("en-US");
  const text =
    result.outcome === "compacted" || result.outcome === "truncated"
      ? `Compacted the conversation: about ${n(result.tokensBefore)} → ${n(result.tokensAfter)} tokens.`
      : result.outcome === "nothing_to_compact"
        ? "Nothing to compact yet."
        : `Could not compact the conversation: ${result.message}`;
  ctx.projection.reply(text);
  return { kind: "command", text };
}

/** before_agent_reply: a plugin may answer with a synthetic reply, or with silence. */
async function claimByPlugin(ctx: ExecuteContext): Promise<ExecuteResult | undefined> {
  const hooks = ctx.rt.pluginHooks;
  if (!hooks.has("before_agent_reply")) return undefined;
  const { spec, prepared } = ctx;
  const claim = await hooks.runBeforeAgentReply({ prompt: spec.message, messages: prepared.history }, prepared.hookCtx);
  if (!claim?.handled) return undefined;
  const text = claim.reply ?? "";
  if (text) {
    ctx.projection.reply(text);
    ctx.projection.write({ role: "assistant", content: [{ type: "text", text }], stopReason: "stop" });
  }
  return { kind: "claimed", text, pluginId: claim.pluginId };
}

/** What the attempts of one run share: the context as it grew, the usage of every call, the model tried last. */
interface AttemptState {
  context: ChatMessage[];
  usage: Usage;
  steps: number;
  model: string;
  last?: LoopOutcome;
}

/**
 * The attempt loop (SPEC 10, 16): the model chain (fallback) around the retry policy around compaction around one
 * run of the inner loop. Every thrown-away attempt resets what clients were shown (projection.discard); the
 * context carries over, so tool results already produced are not redone. The final outcome is settled.
 */
async function attemptLoop(ctx: ExecuteContext, context: ChatMessage[]): Promise<ExecuteResult> {
  const state: AttemptState = { context, usage: emptyUsage(), steps: 0, model: ctx.prepared.model.ref };
  const chain = [...ctx.prepared.profile.modelChain];
  let outcome: LoopOutcome;
  try {
    const done = await runWithFallback({
      chain,
      signal: ctx.signal,
      attempt: (ref) => attemptsOnModel(ctx, state, ref),
      onFallback: (n) => {
        ctx.projection.discard();
        ctx.spans?.nextAttemptCause({ reason: "fallback", fallbackReason: n.reason, from: n.from });
        ctx.events.emit("lifecycle", { phase: "fallback", from: n.from, to: n.to, reason: n.reason });
      },
    });
    outcome = { ...done.result, usage: state.usage, steps: state.steps };
    state.model = done.model;
  } catch (err) {
    outcome = failedOutcome(state, err);
  }
  ctx.projection.settle();
  try {
    await ctx.projection.flushed();
  } catch (err) {
    outcome = failedOutcome(state, err);
  }
  return { kind: "loop", outcome, model: state.model, usage: state.usage };
}

/** One model of the chain: retried per its provider's policy; a failed outcome is thrown for retry/fallback. */
async function attemptsOnModel(ctx: ExecuteContext, state: AttemptState, ref: string): Promise<LoopOutcome> {
  const model = ctx.prepared.profile.resolveModel(ref);
  state.model = model.ref;
  return withModelRetries({
    policy: retryPolicyFor(ctx.prepared.profile.config.models.providers[model.providerId]?.retry),
    signal: ctx.signal,
    call: () => attemptWithCompaction(ctx, state, model),
    onRetry: (n) => {
      ctx.projection.discard();
      ctx.spans?.nextAttemptCause({ reason: "retry", retryReason: n.reason });
      ctx.events.emit("lifecycle", {
        phase: "retry",
        attempt: n.attempt,
        delayMs: n.delayMs,
        reason: n.reason,
        model: model.ref,
      });
    },
  });
}

/** One run of the inner loop; a context-length failure is compacted and tried again (the guard bounds how often). */
async function attemptWithCompaction(
  ctx: ExecuteContext,
  state: AttemptState,
  model: ResolvedModel,
): Promise<LoopOutcome> {
  while (true) {
    const outcome = await tracedAttempt(ctx, model, {
      model,
      messages: state.context,
      thinking: ctx.choices.thinking,
      timeoutMs: ctx.choices.timeoutMs,
      signal: ctx.signal,
      transformContext: ctx.context?.transformFor(model),
    });
    state.usage = addUsage(state.usage, outcome.usage);
    state.steps += outcome.steps;
    state.context = outcome.messages;
    state.last = outcome;
    if (outcome.stopReason !== "error") return outcome;
    const err = outcome.error ?? new Error("model error");
    // a compaction that already failed is final for this model (fallback may still try a larger window)
    const overflow =
      err instanceof ProviderError && err.kind === "context_length" && !(err instanceof CompactionFailedError);
    if (!overflow || !ctx.context || ctx.signal.aborted) throw err;
    ctx.projection.discard();
    ctx.spans?.nextAttemptCause({ reason: "compaction" });
    state.context = await ctx.context!.afterOverflow(state.context, model);
  }
}

/** One run of the loop inside its attempt span (when tracing is on): the span ends with how the loop ended. */
async function tracedAttempt(ctx: ExecuteContext, model: ResolvedModel, input: AttemptInput): Promise<LoopOutcome> {
  const spans = ctx.spans?.attempt(model);
  if (!spans) return runAttempt(ctx.rt, ctx.spec, ctx.prepared, ctx.projection, input);
  let outcome: LoopOutcome;
  try {
    outcome = await runAttempt(ctx.rt, ctx.spec, ctx.prepared, ctx.projection, { ...input, spans });
  } catch (err) {
    spans.end("error", errorType(err));
    throw err;
  }
  spans.end(outcome.stopReason, outcome.stopReason === "error" ? errorType(outcome.error) : undefined);
  return outcome;
}

/** A failure's kind for `error.type`: the provider error kind, else the run's error kind (never the message). */
function errorType(err: unknown): string {
  return err instanceof ProviderError ? err.kind : errorKind(err);
}

/** The run's outcome when the chain gave up: the last attempt's, with the error that ended it (all models listed). */
function failedOutcome(state: AttemptState, err: unknown): LoopOutcome {
  return {
    finalText: "",
    toolErrors: [],
    ...state.last,
    stopReason: "error",
    error: err instanceof Error ? err : new Error(String(err)),
    usage: state.usage,
    steps: state.steps,
    messages: state.context,
  };
}
