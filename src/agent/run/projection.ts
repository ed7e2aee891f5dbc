import type { AssistantMessage, ChatMessage } from "../../providers/types.js";
import { capText, redactSecrets, sanitizeForEvent } from "../../tools/sanitize.js";
import type { LoopEvent } from "../loop.js";
import type { AgentRuntime } from "../runtime.js";
import type { RunEmitter } from "./events.js";
import type { PreparedRun } from "./prepare.js";
import { TextCheckpoints } from "./text-checkpoint.js";

/**
 * Event projection and persistence: each loop event becomes at most one run event and at most one transcript row.
 *
 * An attempt may be thrown away (a retry, a compaction, a fallback), so two things are held back until the
 * attempt's fate is known: the partial assistant message of a failed model call is kept aside (`settle` writes it,
 * `discard` drops it), and after `discard` the next assistant delta says `replace`, so clients drop the text they
 * already showed. Rows for complete messages (tool calls and their results) are written at once: they stay valid
 * context for the next attempt.
 */
export class RunProjection {
  /** every message this run added to the transcript, in order (agent_end gets them) */
  readonly written: ChatMessage[] = [];
  private heldPartial?: AssistantMessage;
  private replaceNext = false;
  private visibleText = false;
  private readonly checkpoints = new TextCheckpoints();
  /** transcript seq of each context message that is a row (compaction records where the kept part starts) */
  private readonly seqs = new WeakMap<ChatMessage, number>();
  private maxSeq = 0;

  constructor(
    private readonly rt: AgentRuntime,
    private readonly prepared: PreparedRun,
    private readonly events: RunEmitter,
    private readonly runId: string,
  ) {
    for (const [i, m] of prepared.history.entries()) this.remember(m, prepared.historySeqs[i]);
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
        this.events.emit("assistant", {
          ...(carry ? { text: ev.text } : {}),
          delta: ev.delta,
          ...(this.replaceNext ? { replace: true } : {}),
        });
        this.replaceNext = false;
        return;
      }
      case "tool_start":
        this.events.emit("tool", {
          phase: "start",
          name: ev.name,
          toolCallId: ev.toolCallId,
          args: sanitizeForEvent(redactSecrets(ev.args)),
        });
        return;
      case "tool_update":
        this.events.emit("tool", {
          phase: "update",
          name: ev.name,
          toolCallId: ev.toolCallId,
          partialResult: capText(ev.partial),
        });
        return;
      case "tool_end":
        this.events.emit("tool", {
          phase: "result",
          name: ev.name,
          toolCallId: ev.toolCallId,
          isError: ev.isError,
          result: capText(ev.result),
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

  /** Writes a message row now (the user's message, a claimed reply); `contextCopy` is the model's view of it. */
  write(message: ChatMessage, contextCopy?: ChatMessage): void {
    const { sessionKey } = this.prepared.hookCtx;
    this.written.push(message);
    const [row] = this.rt.store.appendTranscript([
      { sessionKey, kind: "message", runId: this.runId, createdAt: this.rt.clock.now(), message },
    ]);
    this.remember(message, row?.seq);
    if (contextCopy) this.sameRow(message, contextCopy);
  }

  /** The attempt is final: a held partial answer is written. */
  settle(): void {
    if (this.heldPartial) this.write(this.heldPartial);
    this.heldPartial = undefined;
  }

  /** The attempt is thrown away: its partial answer is dropped and clients replace the text they showed. */
  discard(): void {
    this.heldPartial = undefined;
    if (this.visibleText) this.replaceNext = true;
    this.visibleText = false;
    this.checkpoints.reset();
  }

  private onMessage(message: ChatMessage): void {
    if (message.role === "assistant" && (message.stopReason === "error" || message.stopReason === "aborted")) {
      this.heldPartial = message;
      return;
    }
    if (message.role === "assistant") {
      this.visibleText = false;
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
    this.write(row, message);
  }
}
