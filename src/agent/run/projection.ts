import type { BlockStreamingBreak } from "../../protocol/agent-events.js";
import type { ReasoningLevel, VerboseLevel } from "../../protocol/enums.js";
import type { AssistantMessage, ChatMessage } from "../../providers/types.js";
import type { TranscriptRow } from "../../storage/types.js";
import {
  capText,
  omitInlineDataUrls,
  omittedImage,
  redactSecrets,
  redactText,
  sanitizeForEvent,
} from "../../tools/sanitize.js";
import type { MessageDelivery } from "../../tools/types.js";
import type { LoopEvent } from "../loop.js";
import type { RunEmitter } from "./events.js";
import { deliverToolMessage } from "./messaging.js";
import type { RunPorts } from "./ports.js";
import type { PreparedRun } from "./prepare.js";
import { ReplyBlocks } from "./reply-blocks.js";
import { TextCheckpoints } from "./text-checkpoint.js";
import { summarizeToolCall } from "./tool-summaries.js";

/** What the run shows besides the answer: its reasoning level, its verbose level, and its block streaming. */
export interface ReplyOptions {
  reasoning: ReasoningLevel;
  verbose: VerboseLevel;
  /** the break the run's reply blocks are sent at (undefined: block streaming is off) */
  blockStreaming?: BlockStreamingBreak;
}

/** How a run that did not end well ended, as its transcript records it (finish.ts classifies it). */
export interface RunFailure {
  message: string;
  kind: string;
  model?: string;
}

/** What reply shaping needs from the run's events: the kept reasoning, tool summaries and mid-run messages. */
export interface ReplyParts {
  /** the reasoning blocks of the attempts that were kept (`on` only), in order */
  reasoning: string[];
  /** one line per tool call (verbose on/full) */
  toolSummaries: string[];
  /** texts the `message` tool delivered */
  messagingSends: string[];
}
/**
 * Event projection and persistence: each loop event becomes at most one run event and at most one transcript row.
 *
 * An attempt may be thrown away (a retry, a compaction, a fallback), so two things are held back until the
 * attempt's fate is known: the partial assistant message of a failed model call is kept aside (`settle` writes it,
 * `discard` drops it), and after `discard` the next assistant delta says `replace`, so clients drop the text they
 * already showed. Rows for complete messages (tool calls and their results) are written at once: they stay valid
 * context for the next attempt.
 *
 * With block streaming on, the assistant text also goes to the run's `ReplyBlocks` (reply-blocks.ts), which sends it
 * as `block` events; `discard` resets it too.
 */
export class RunProjection {
  /** every message this run added to the transcript, in order (agent_end gets them) */
  readonly written: ChatMessage[] = [];
  /** the last append issued (each settles after the ones before it) */
  private writes: Promise<void> = Promise.resolve();
  private writeError: unknown;
  private heldPartial?: AssistantMessage;
  /** the answer, written with the run's end (endWithAnswer) */
  private heldAnswer?: { message: ChatMessage; contextCopy: ChatMessage };
  private settledPartial?: AssistantMessage;
  private replaceNext = false;
  private visibleText = false;
  private readonly checkpoints = new TextCheckpoints();
  /** transcript seq of each context message that is a row (compaction records where the kept part starts) */
  private readonly seqs = new WeakMap<ChatMessage, number>();
  private maxSeq = 0;
  /** what reply shaping takes from this run; reasoning is cleared with a thrown-away attempt */
  readonly parts: ReplyParts = { reasoning: [], toolSummaries: [], messagingSends: [] };
  /** the thinking block being streamed (`stream`), and whether a client was shown reasoning of this attempt */
  private thinkingSoFar = "";
  private readonly thinkingCheckpoints = new TextCheckpoints();
  private visibleThinking = false;
  private replaceThinking = false;
  /** args of the tool calls in flight, for their summary line */
  private readonly callArgs = new Map<string, Record<string, unknown>>();
  /** tool calls whose start event went out, and sends waiting for theirs (a message never precedes its call) */
  private readonly startedCalls = new Set<string>();
  private readonly startWaiters = new Map<string, () => void>();
  private readonly blocks?: ReplyBlocks;

  constructor(
    private readonly rt: RunPorts,
    private readonly prepared: PreparedRun,
    private readonly events: RunEmitter,
    private readonly runId: string,
    private readonly options: ReplyOptions = { reasoning: "off", verbose: "off" },
  ) {
    for (const [i, m] of prepared.history.entries()) this.remember(m, prepared.historySeqs[i]);
    if (options.blockStreaming) this.blocks = new ReplyBlocks(options.blockStreaming, events, rt.clock);
  }

  /** The text the reply blocks of the last complete message already delivered ("" without block streaming). */
  deliveredByBlocks(): string {
    return this.blocks?.delivered() ?? "";
  }

  /** A reply that did not come from the model (a plugin's, a command's): streamed as one message. */
  reply(text: string): void {
    this.events.emit("assistant", { text, delta: text });
    this.blocks?.onDelta(text);
    this.blocks?.onMessageEnd(text);
  }

  /** The run is over: nothing more is streamed (a held delta goes out, an idle block timer is cancelled). */
  close(): void {
    this.events.flush?.();
    this.blocks?.close();
  }

  seqOf(message: ChatMessage): number | undefined {
    return this.seqs.get(message);
  }

  /** `copy` stands for the same row as `original` (a cut-down copy, the model's view of the user's message). */
  sameRow(original: ChatMessage, copy: ChatMessage): void {
    const seq = this.seqs.get(original);
    if (seq !== undefined && copy !== original) this.seqs.set(copy, seq);
  }

  lastSeq(): number {
    return this.maxSeq;
  }

  private remember(message: ChatMessage, seq: number | undefined): void {
    if (!seq) return;
    this.seqs.set(message, seq);
    this.maxSeq = Math.max(this.maxSeq, seq);
  }

  onLoopEvent(ev: LoopEvent): void {
    switch (ev.type) {
      case "text_delta": {
        this.visibleText = true;
        // a `replace` delta is always a checkpoint: the client drops what it showed and starts from `text`
        if (this.replaceNext) this.checkpoints.reset();
        const carry = this.checkpoints.carry(ev.text.length);
        // most deltas are neither a checkpoint nor a replace: the plain object then, not one built by spreads
        this.events.emit(
          "assistant",
          carry || this.replaceNext
            ? { ...(carry ? { text: ev.text } : {}), delta: ev.delta, ...(this.replaceNext ? { replace: true } : {}) }
            : { delta: ev.delta },
        );
        this.replaceNext = false;
        this.blocks?.onDelta(ev.delta);
        return;
      }
      case "thinking_delta":
        this.onThinkingDelta(ev.delta);
        return;
      case "thinking_end":
        this.onThinkingEnd(ev.thinking);
        return;
      case "tool_start":
        if (this.options.verbose !== "off") this.callArgs.set(ev.toolCallId, ev.args);
        this.events.emit("tool", {
          phase: "start",
          name: ev.name,
          toolCallId: ev.toolCallId,
          args: sanitizeForEvent(redactSecrets(ev.args)),
        });
        this.startedCalls.add(ev.toolCallId);
        this.startWaiters.get(ev.toolCallId)?.();
        return;
      case "tool_update":
        this.events.emit("tool", {
          phase: "update",
          name: ev.name,
          toolCallId: ev.toolCallId,
          partialResult: capText(omitInlineDataUrls(ev.partial)),
        });
        return;
      case "tool_end":
        this.summarize(ev);
        this.events.emit("tool", {
          phase: "result",
          name: ev.name,
          toolCallId: ev.toolCallId,
          isError: ev.isError,
          result: capText(omitInlineDataUrls(ev.result)),
          ...(ev.images ? { images: ev.images.map(omittedImage) } : {}),
          ...(ev.skipped ? { skipped: ev.skipped } : {}),
        });
        return;
      case "message":
        this.onMessage(ev.message);
        return;
      default:
        return;
    }
  }

  /**
   * Writes a message row now (the user's message, a claimed reply); `contextCopy` is the model's view of it. The
   * append is issued here, in order (the store applies a session's appends in call order); its seq is known when it
   * settles, and `flushed()` waits for that and reports a write that failed.
   */
  write(message: ChatMessage, contextCopy?: ChatMessage): void {
    this.writeHeld();
    this.written.push(message);
    this.append(message, contextCopy, (rows) => this.rt.store.appendTranscript(rows));
  }

  /**
   * Issues the append of `message` through `store` and chains what follows its commit on the appends before it:
   * rows are remembered (and announced) in the order they were written. `store` resolving to undefined wrote nothing.
   * A failure is reported by `flushed()` unless `quiet` (the caller then handles it).
   */
  private append(
    message: ChatMessage,
    contextCopy: ChatMessage | undefined,
    store: (rows: Array<Omit<TranscriptRow, "seq" | "generation">>) => Promise<TranscriptRow[] | undefined>,
    quiet = false,
  ): Promise<TranscriptRow[] | undefined> {
    const { sessionKey } = this.prepared.hookCtx;
    const appended = store([
      { sessionKey, kind: "message", runId: this.runId, createdAt: this.rt.clock.now(), message },
    ]);
    const stored = this.writes.then(() =>
      appended.then((rows) => {
        const row = rows?.[0];
        this.remember(message, row?.seq);
        // the one place a run's transcript messages are appended: followers of the session hear of each one,
        // once it is stored
        if (row) this.rt.sessionEvents.emit({ type: "message", sessionKey, row });
        if (row && contextCopy) this.sameRow(message, contextCopy);
        return rows;
      }),
    );
    this.writes = stored.then(
      () => {},
      (err: unknown) => {
        if (!quiet) this.writeError ??= err;
      },
    );
    return stored;
  }

  /**
   * The answer (an assistant message without tool calls: the loop's last) is held, not written, so the run's end can
   * go with it in one commit (endWithAnswer). Anything written after it writes it first, in its place.
   */
  private holdAnswer(message: ChatMessage, contextCopy: ChatMessage): void {
    this.writeHeld();
    this.written.push(message);
    this.heldAnswer = { message, contextCopy };
  }

  /** The held answer goes alone, as any message would. */
  private writeHeld(): void {
    const held = this.heldAnswer;
    if (!held) return;
    this.heldAnswer = undefined;
    this.append(held.message, held.contextCopy, (rows) => this.rt.store.appendTranscript(rows));
  }

  /**
   * The run's end: the held answer is written through `record` with the run's end (one commit), and when there is no
   * `record`, it declines, or it fails (the end is then written as before, by its caller), the answer goes alone.
   * Resolves once the answer is stored; a failed write is reported by `flushed()`.
   */
  async endWithAnswer(
    record?: (rows: Array<Omit<TranscriptRow, "seq" | "generation">>) => Promise<TranscriptRow[] | undefined>,
  ): Promise<void> {
    const held = this.heldAnswer;
    if (held && record) {
      this.heldAnswer = undefined;
      const stored = await this.append(held.message, held.contextCopy, record, true).catch(() => undefined);
      if (stored === undefined) this.heldAnswer = held;
    }
    this.writeHeld();
    // a write that failed before this was reported already (the run's last rows are flushed before it)
    const before = this.writeError;
    await this.writes;
    if (this.writeError !== before) throw this.writeError;
  }

  /** Every row written so far is stored and its seq known; rejects with the first write that failed. */
  async flushed(): Promise<void> {
    await this.writes;
    if (this.writeError !== undefined) throw this.writeError;
  }

  /**
   * The attempt is final: a held partial answer is kept for `end`, which writes it with the run's failure (the
   * partial of a failed call always belongs to a run that did not end well).
   */
  settle(): void {
    this.settledPartial = this.heldPartial;
    this.heldPartial = undefined;
  }

  /**
   * The run is over. One that ended in error, timeout or abort leaves its trace in the transcript: the partial
   * answer it streamed, or a marker row with no content, carrying `errorMessage` and `errorKind` (an assistant
   * message in OpenClaw's shape: chat.history shows it after a reload; the model's context skips the marker).
   */
  end(failure: RunFailure | undefined): void {
    const partial = this.settledPartial;
    this.settledPartial = undefined;
    if (!failure) {
      if (partial) this.write(partial);
      return;
    }
    const stopReason = failure.kind === "aborted" || failure.kind === "timeout" ? "aborted" : "error";
    this.write({
      ...(partial ?? { role: "assistant", content: [] }),
      stopReason,
      ...(failure.model && !partial?.model ? { model: failure.model } : {}),
      // secrets a provider echoed into its error text are masked before the row is stored
      errorMessage: redactText(failure.message),
      errorKind: failure.kind,
    });
  }

  /**
   * The attempt is thrown away: its partial answer and its reasoning are dropped, and clients replace the text and
   * reasoning they showed. Tool summaries and delivered messages stay: those tools ran and their results stay in
   * the context (the next attempt does not run them again), and a delivered message cannot be taken back.
   */
  discard(): void {
    // a complete message stays valid context for the next attempt: a held answer is written, as any message is
    this.writeHeld();
    this.heldPartial = undefined;
    this.blocks?.discard();
    if (this.visibleText) this.replaceNext = true;
    this.visibleText = false;
    this.parts.reasoning.length = 0;
    this.thinkingSoFar = "";
    this.thinkingCheckpoints.reset();
    if (this.visibleThinking) this.replaceThinking = true;
    this.visibleThinking = false;
    this.checkpoints.reset();
  }

  /** The `message` tool's port: delivers now, and remembers the text so the final reply does not repeat it. */
  async sendMessage(text: string, toolCallId: string): Promise<MessageDelivery> {
    // The tool runs as soon as the loop starts it, before its start event has been projected: the message waits
    // for that event, so clients see the call, then the message, then the result.
    await this.callStarted(toolCallId);
    const outcome = await deliverToolMessage(this.rt, this.events, this.prepared.hookCtx, text, toolCallId);
    if (outcome.sent) this.parts.messagingSends.push(outcome.text);
    return outcome;
  }

  /**
   * Resolves once the start event of `toolCallId` has gone out. A tool runs as soon as the loop starts it, before
   * that event is projected: what the tool itself reports (a message it sends, an approval it waits for) waits for
   * it, so clients see the call first.
   */
  async callStarted(toolCallId: string | undefined): Promise<void> {
    if (!toolCallId || this.startedCalls.has(toolCallId)) return;
    await new Promise<void>((resolve) => this.startWaiters.set(toolCallId, resolve));
    this.startWaiters.delete(toolCallId);
  }

  /** `stream`: every delta goes out as it comes; the block so far rides on checkpoints. */
  private onThinkingDelta(delta: string): void {
    if (this.options.reasoning !== "stream" || delta === "") return;
    this.thinkingSoFar += delta;
    if (this.replaceThinking) this.thinkingCheckpoints.reset();
    const carry = this.thinkingCheckpoints.carry(this.thinkingSoFar.length);
    this.emitThinking(carry ? this.thinkingSoFar : undefined, delta);
  }

  /** `on`: the complete block goes out once, and is kept for the reasoning payload. */
  private onThinkingEnd(thinking: string): void {
    this.thinkingSoFar = "";
    this.thinkingCheckpoints.reset();
    if (this.options.reasoning !== "on" || !thinking.trim()) return;
    this.parts.reasoning.push(thinking);
    this.emitThinking(thinking, thinking);
  }

  private emitThinking(text: string | undefined, delta: string): void {
    this.events.emit("thinking", {
      ...(text !== undefined ? { text } : {}),
      delta,
      ...(this.replaceThinking ? { replace: true } : {}),
    });
    this.replaceThinking = false;
    this.visibleThinking = true;
  }

  private summarize(ev: Extract<LoopEvent, { type: "tool_end" }>): void {
    this.startedCalls.delete(ev.toolCallId);
    const level = this.options.verbose;
    if (level === "off") return;
    const args = this.callArgs.get(ev.toolCallId) ?? {};
    this.callArgs.delete(ev.toolCallId);
    // a call the model never got to run (skipped for a steering message, aborted) is not something it did
    if (ev.skipped === "steer" || ev.skipped === "aborted") return;
    // a delivered message is already in front of the user; a summary line would only repeat it
    if (ev.name === "message" && !ev.isError) return;
    this.parts.toolSummaries.push(
      summarizeToolCall({ name: ev.name, args, isError: ev.isError, result: ev.result }, level),
    );
  }

  private onMessage(message: ChatMessage): void {
    // the message's last deltas go out before anything that follows it; a held delta must not carry them into the
    // next message, whose first event starts a new `text`
    if (message.role === "assistant") this.events.flush?.();
    if (message.role === "assistant" && (message.stopReason === "error" || message.stopReason === "aborted")) {
      this.heldPartial = message;
      return;
    }
    if (message.role === "assistant") {
      this.visibleText = false;
      this.blocks?.onMessageEnd(textOf(message));
      this.checkpoints.reset();
    }
    const hooks = this.rt.pluginHooks;
    let row = message;
    // tool_result_persist runs synchronously, right before the row is written.
    if (row.role === "toolResult" && hooks.has("tool_result_persist")) {
      row = hooks.runToolResultPersist(
        { message: row, toolName: row.toolName, toolCallId: row.toolCallId },
        this.prepared.hookCtx,
      );
    }
    if (row.role === "assistant" && !row.content.some((c) => c.type === "toolCall")) this.holdAnswer(row, message);
    else this.write(row, message);
  }
}

function textOf(message: AssistantMessage): string {
  return message.content
    .filter((c): c is Extract<typeof c, { type: "text" }> => c.type === "text")
    .map((c) => c.text)
    .join("");
}
