import type { CompactionEvent } from "../../hooks/plugin-hooks.js";
import type { ResolvedModel } from "../../providers/registry.js";
import { type ChatMessage, ProviderError, type ToolSpec } from "../../providers/types.js";
import type { ContextInfo } from "../loop.js";
import { providerFor } from "./attempt.js";
import type { CompactionReason, CompactionResult, compactContext } from "./compaction.js";
import { compactionReserve, needsCompaction, oversizedMessageLimit } from "./context-budget-check.js";
import type { RunEmitter } from "./events.js";
import type { ContextGuard } from "./execute.js";
import type { RunPorts } from "./ports.js";
import type { PreparedRun } from "./prepare.js";
import type { RunProjection } from "./projection.js";
import type { SummarizePort } from "./summarize-history.js";
import { estimateContextTokens, projectContextTokens } from "./token-estimate.js";
import { cutOversizedMessages } from "./truncate-oversized.js";

/**
 * The context still does not fit after compaction did what it could. It is a context_length ProviderError, so the
 * run may fall back to a model with a larger window, but the attempt loop must not compact again for it.
 */
export class CompactionFailedError extends ProviderError {
  constructor(message: string) {
    super("context_length", message);
    this.name = "CompactionFailedError";
  }
}

export interface GuardContext {
  rt: RunPorts;
  prepared: PreparedRun;
  events: RunEmitter;
  projection: RunProjection;
  signal: AbortSignal;
  runId: string;
  timeoutMs: number;
}

/**
 * Keeps every model call inside the window (SPEC 10): before each call, oversized messages are cut and the projected
 * size (the provider's count for the previous call plus an estimate of what was added) is checked against
 * window − reserve; over it, or after the provider refused the context, the history is compacted. Compactions are
 * counted per run and bounded; a compaction that cannot bring the context under budget ends the run.
 */
export class RunContextGuard implements ContextGuard {
  private attempts = 0;
  private readonly tools: ToolSpec[];

  constructor(private readonly c: GuardContext) {
    this.tools = [...c.prepared.profile.toolSpecs];
  }

  transformFor(model: ResolvedModel) {
    return async (messages: ChatMessage[], info: ContextInfo): Promise<ChatMessage[]> => {
      const { window, reserve } = this.budget(model);
      const cut = this.cut(messages, window, reserve);
      const projected = projectContextTokens({
        lastUsage: info.previous?.usage,
        // the previous call covered what it sent plus its own reply
        coveredMessageCount: info.previous ? info.previous.sentMessages + 1 : undefined,
        messages: cut,
        system: this.c.prepared.system,
        tools: this.tools,
      });
      if (!needsCompaction(projected, window, reserve)) return cut;
      return this.compact(cut, model, "threshold", projected);
    };
  }

  afterOverflow(messages: ChatMessage[], model: ResolvedModel): Promise<ChatMessage[]> {
    return this.compact(messages, model, "overflow");
  }

  /** `/compact [instructions]`: compacts now, whatever the size; returns what happened, for the reply. */
  async compactNow(messages: ChatMessage[], model: ResolvedModel, instructions?: string): Promise<CompactionResult> {
    let result: CompactionResult | undefined;
    try {
      await this.compact(messages, model, "manual", undefined, instructions, (r) => {
        result = r;
      });
    } catch (err) {
      // a failed manual compaction is an answer to the command, not a failed run
      if (!(err instanceof CompactionFailedError) || !result) throw err;
    }
    return result!;
  }

  private budget(model: ResolvedModel): { window: number; reserve: number } {
    const window = model.model.contextWindow;
    return {
      window,
      reserve: compactionReserve(window, this.c.prepared.profile.config.agents.defaults.compaction.reserveTokens),
    };
  }

  /** One message alone over half the budget is cut to head + tail (no row: the cut is redone on reload). */
  private cut(messages: ChatMessage[], window: number, reserve: number): ChatMessage[] {
    const { messages: out, cut } = cutOversizedMessages(messages, oversizedMessageLimit(window, reserve));
    if (cut > 0) {
      for (const [i, m] of out.entries()) this.c.projection.sameRow(messages[i], m);
    }
    return out;
  }

  private async compact(
    messages: ChatMessage[],
    model: ResolvedModel,
    reason: CompactionReason,
    projected?: number,
    instructions?: string,
    onResult?: (r: CompactionResult) => void,
  ): Promise<ChatMessage[]> {
    const { prepared, events } = this.c;
    const cfg = prepared.profile.config.agents.defaults.compaction;
    const { window, reserve } = this.budget(model);
    const summarizer = cfg.model ? prepared.profile.resolveModel(cfg.model) : model;
    const tokensBefore = projected ?? estimateContextTokens(messages, prepared.system, this.tools);
    events.emit("compaction", { phase: "start", reason, tokensBefore });
    await this.hook("before_compaction", { messageCount: messages.length, tokenCount: tokensBefore });
    const result = await this.summarize(tokensBefore, reason, {
      messages,
      system: prepared.system,
      tools: this.tools,
      window,
      reserve,
      keepRecentTokens: cfg.keepRecentTokens,
      summarize: this.summarizer(summarizer),
      summarizerWindow: summarizer.model.contextWindow,
      maxAttempts: cfg.maxAttempts,
      attemptsSoFar: this.attempts,
      reason,
      instructions,
      signal: this.c.signal,
    });
    if (result.outcome === "compacted" || result.outcome === "truncated") this.attempts++;
    onResult?.(result);
    return this.settle(messages, result, reason, tokensBefore);
  }

  /** compactContext; when the summarizer itself fails, the compaction is reported as ended before the error goes up. */
  private async summarize(
    tokensBefore: number,
    reason: CompactionReason,
    input: Parameters<typeof compactContext>[0],
  ): Promise<CompactionResult> {
    try {
      // the compaction modules load on the first compaction: most runs (every short one-shot CLI turn) never compact
      const { compactContext } = await import("./compaction.js");
      return await compactContext(input);
    } catch (err) {
      this.c.events.emit("compaction", {
        phase: "end",
        reason,
        completed: false,
        willRetry: false,
        tokensBefore,
        tokensAfter: tokensBefore,
        outcome: "summarizer_failed",
      });
      throw err;
    }
  }

  /** Writes the compaction row, reports the end, and returns the context to go on with (or throws). */
  private async settle(
    messages: ChatMessage[],
    result: CompactionResult,
    reason: CompactionReason,
    tokensBefore: number,
  ): Promise<ChatMessage[]> {
    const end = (completed: boolean, tokensAfter: number) =>
      this.c.events.emit("compaction", {
        phase: "end",
        reason,
        completed,
        willRetry: completed && reason !== "manual",
        tokensBefore,
        tokensAfter,
        outcome: result.outcome,
      });
    switch (result.outcome) {
      case "compacted": {
        await this.persist(messages, result.firstKeptIndex, result.summary);
        end(true, result.tokensAfter);
        await this.hook("after_compaction", {
          messageCount: result.messages.length,
          tokenCount: result.tokensAfter,
          compactedCount: result.summarizedCount,
          summary: result.summary,
        });
        return result.messages;
      }
      case "truncated":
        end(true, result.tokensAfter);
        return result.messages;
      case "nothing_to_compact":
        end(false, tokensBefore);
        return messages;
      case "failed":
        end(false, result.tokensAfter);
        throw new CompactionFailedError(result.message);
      case "exhausted":
        end(false, tokensBefore);
        throw new CompactionFailedError(result.message);
    }
  }

  /** The compaction row: the summary, and the seq of the first message kept verbatim (under the run's lock). */
  private async persist(messages: ChatMessage[], firstKeptIndex: number, summary: string): Promise<void> {
    const { rt, prepared, projection } = this.c;
    await projection.flushed();
    const kept = messages.slice(firstKeptIndex).map((m) => projection.seqOf(m));
    const firstKeptSeq = kept.find((s) => s !== undefined) ?? projection.lastSeq() + 1;
    await rt.store.appendCompaction(prepared.hookCtx.sessionKey, {
      summary,
      firstKeptSeq,
      runId: this.c.runId,
      createdAt: rt.clock.now(),
    });
    // the provider's prompt cache is cold after a compaction: the session's auth profile pin may move (SPEC 23)
    prepared.profile.credentials?.compacted();
  }

  private summarizer(model: ResolvedModel): SummarizePort {
    return async (prompt, signal) => {
      // a compaction summary is a model call of the run: its budgets are checked and its usage recorded too
      const provider = await providerFor(this.c.rt, model, this.c.timeoutMs, undefined, this.c.prepared.profile, {
        runId: this.c.runId,
        sessionKey: this.c.prepared.hookCtx.sessionKey,
        agentId: this.c.prepared.profile.agentId,
        limits: this.c.prepared.profile.limits,
        credentials: this.c.prepared.profile.credentials,
      });
      let text = "";
      const stream = provider.stream({
        model: model.modelId,
        system: prompt.system,
        messages: prompt.messages,
        tools: [],
        maxTokens: prompt.maxTokens,
        signal,
      });
      for await (const ev of stream) if (ev.type === "text_delta") text += ev.delta;
      return text;
    };
  }

  private async hook(name: "before_compaction" | "after_compaction", event: CompactionEvent): Promise<void> {
    const hooks = this.c.rt.pluginHooks;
    if (hooks.has(name)) await hooks.runObservers(name, event, this.c.prepared.hookCtx);
  }
}
