import { isSilentReply, stripTrailingSilentToken } from "../agent/reply.js";
import { TextCheckpoints } from "../agent/run/text-checkpoint.js";

/**
 * Chat deltas are paced (a few tokens each), so a checkpoint's copy of the reply is a bigger share of a chat stream
 * than of the agent stream: chat checkpoints are spaced wider (the reply must grow by half), which keeps their total
 * under 3× the reply. A chat client that joins late also has `chat.history`.
 */
const CHAT_CHECKPOINT_GROWTH = 0.5;

import { SilentTail } from "../agent/silent-prefix.js";
import type { Beat, Cadence } from "../infra/cadence.js";
import type { Clock } from "../infra/clock.js";
import type { AgentEvent, AgentEventOf } from "../infra/events.js";
import type { ChatErrorKind, ChatEventPayload, ChatMessagePayload } from "../protocol/payloads.js";

const errorKinds = new Set<string>(["refusal", "timeout", "rate_limit", "context_length"]);

export function chatErrorKind(kind: unknown, status: unknown): ChatErrorKind {
  if (status === "timeout") return "timeout";
  return typeof kind === "string" && errorKinds.has(kind) ? (kind as ChatErrorKind) : "unknown";
}

interface RunChat {
  sessionKey: string;
  /** every delta of the run so far (since the last `replace`) */
  text: string;
  /** how much of `text` chat deltas have carried */
  sent: number;
  /**
   * `text` after `sent`, kept apart: slicing the next delta out of `text` (a rope, built by `+=`) copied the whole
   * reply on every flush; `text` itself is read only at checkpoints and at the end
   */
  unsent: string;
  /** the end of `text` that could still become the silent token (follows `text` without reading it whole) */
  silent: SilentTail;
  /** seq of the newest assistant event folded into `text` */
  pendingSeq: number;
  lastFlushAt: number;
  /** a flush is due later: a timer, or (on a beat) waiting for one */
  timer: unknown;
  waitingForBeat: boolean;
  /** an assistant delta came since the last beat looked at this run: the stream is flowing */
  deltaSinceBeat: boolean;
  /** the run's view of the beat (its phase), when pacing on one */
  beat: Beat | undefined;
  /** made once per run, on the first delta that has to wait for a beat */
  onBeat: (() => void) | undefined;
  /** the next delta replaces what the client has shown (a retry or compaction restarted the answer) */
  replace: boolean;
  /** the run streams blocks (its lifecycle start said so): its chat deltas are its blocks */
  blocks: boolean;
  /** the blocks' text so far (since the last block `replace`) */
  blockText: string;
  /** which deltas carry the whole `message` (the same checkpoint rule as the assistant event's `text`) */
  checkpoints: TextCheckpoints;
}

/**
 * SPEC 12: the agent stream projected to chat events; lifecycle end → `final`, lifecycle error → `aborted` or
 * `error` with a kind.
 *
 * Token deltas are buffered into `delta` messages, sent at most every `intervalMs` (75 ms by default; the first one
 * at once, so a chat shows the reply starting) and flushed before the terminal event. A trailing fragment that could
 * still grow into the silent token (`NO_`, `no_rep`, or a whole text so far like `NO_REPL`) is held back until it
 * cannot; a reply that turns out to be exactly `NO_REPLY` was never shown, and the final carries no message.
 *
 * On the runtime's stream beat (infra/cadence.ts, `beat`), a pending delta goes out with the first assistant delta
 * at least `intervalMs` after the last chat delta: the two leave in the same socket write, and the chat delta
 * carries everything the assistant deltas did. A stream that pauses gets its pending text from a later beat.
 * Without a beat each run waits on a timer of its own.
 *
 * A delta's `deltaText` is what is new; its `message` (the whole reply so far, which OpenClaw clients may show in
 * place of what they have) rides only on checkpoint deltas: the first, one after a `replace`, and then whenever the
 * reply has grown by max(512 characters, half its length at the last checkpoint), the agent event's rule
 * (agent/run/text-checkpoint.ts) spaced wider. A copy of the whole reply on every delta made a long reply cost
 * O(n²) bytes per chat client; the final always carries the whole message.
 *
 * A run that streams blocks (block streaming, SPEC 7) sends one `delta` per block instead: `deltaText` is the block
 * and `message` all blocks so far. Blocks are not paced (each is a message of its own, 800–1,200 chars, and already
 * coalesced), and a block that says `replace` restarts the message like a token delta that does.
 */
export class ChatProjector {
  private readonly runs = new Map<string, RunChat>();
  private readonly emit: (payload: ChatEventPayload) => void;
  private readonly clock: Clock;
  private readonly intervalMs: number;
  private readonly beat: Cadence | undefined;

  constructor(opts: {
    emit: (payload: ChatEventPayload) => void;
    clock: Clock;
    intervalMs: number;
    /** the beat to pace on; ignored when it is slower than `intervalMs` (deltas would come later than asked) */
    beat?: Cadence;
  }) {
    this.emit = opts.emit;
    this.clock = opts.clock;
    this.intervalMs = opts.intervalMs;
    this.beat = opts.beat && opts.beat.periodMs <= opts.intervalMs ? opts.beat : undefined;
  }

  onAgentEvent(ev: AgentEvent): void {
    if (ev.stream === "message") {
      // A message the model sent with the `message` tool is chat text too: its own paragraph in the run's reply.
      this.onAgentEvent({ ...ev, stream: "assistant", data: { text: ev.data.text, delta: `${ev.data.text}\n\n` } });
      return;
    }
    if (ev.stream === "assistant") {
      this.onAssistant(ev);
      return;
    }
    if (ev.stream === "block") {
      this.onBlock(ev);
      return;
    }
    if (ev.stream !== "lifecycle") return;
    const phase = ev.data.phase;
    if (phase === "start" && ev.data.blockStreaming) {
      this.runFor(ev.runId, ev.sessionKey).blocks = true;
      return;
    }
    if (phase !== "end" && phase !== "error") return;
    const run = this.runs.get(ev.runId);
    if (run) {
      this.stopWaiting(run);
      if (!run.blocks) this.flush(ev.runId, run);
      this.runs.delete(ev.runId);
    }
    this.emit(this.terminal(ev, run?.text ?? ""));
  }

  private runFor(runId: string, sessionKey: string): RunChat {
    let run = this.runs.get(runId);
    if (!run) {
      run = {
        sessionKey,
        text: "",
        sent: 0,
        unsent: "",
        silent: new SilentTail(),
        pendingSeq: 0,
        lastFlushAt: -Infinity,
        timer: undefined,
        waitingForBeat: false,
        deltaSinceBeat: false,
        beat: this.beat?.lane(runId),
        onBeat: undefined,
        replace: false,
        blocks: false,
        blockText: "",
        checkpoints: new TextCheckpoints(CHAT_CHECKPOINT_GROWTH),
      };
      this.runs.set(runId, run);
    }
    return run;
  }

  private onAssistant(ev: AgentEventOf<"assistant">): void {
    const delta = ev.data.delta;
    if (typeof delta !== "string" || delta === "") return;
    const run = this.runFor(ev.runId, ev.sessionKey);
    if (ev.data.replace) {
      // Text already sent is void: only a delta that says `replace` may take it back (SPEC 10).
      run.replace = run.replace || run.sent > 0;
      run.text = "";
      run.sent = 0;
      run.unsent = "";
      run.silent.reset();
    }
    run.text += delta;
    run.unsent += delta;
    run.silent.append(delta);
    run.pendingSeq = ev.seq;
    // with blocks the text goes out as blocks; it is kept for the final
    if (run.blocks || run.timer !== undefined) return;
    const wait = run.lastFlushAt + this.intervalMs - this.clock.now();
    if (wait <= 0) {
      // on a beat, the delta due goes out with the assistant delta that made it due (the same socket write)
      this.stopWaiting(run);
      this.flush(ev.runId, run);
    } else if (run.beat) {
      run.deltaSinceBeat = true;
      if (!run.waitingForBeat) this.waitForBeat(ev.runId, run, run.beat);
    } else {
      run.timer = this.clock.setTimeout(() => {
        run.timer = undefined;
        this.flush(ev.runId, run);
      }, wait);
    }
  }

  /**
   * The beat sends a due delta only for a stream that paused: while assistant deltas keep coming, the next one
   * sends it (above), so that the two leave together. Assistant deltas a provider paced to the beat arrive just
   * after its callbacks, which is why a delta seen since the last beat means "wait one more".
   */
  private waitForBeat(runId: string, run: RunChat, beat: Beat): void {
    run.onBeat ??= () => {
      run.waitingForBeat = false;
      const flowing = run.deltaSinceBeat;
      run.deltaSinceBeat = false;
      if (!flowing && this.clock.now() - run.lastFlushAt >= this.intervalMs) this.flush(runId, run);
      else this.waitForBeat(runId, run, beat);
    };
    run.waitingForBeat = true;
    beat.after(run.onBeat);
  }

  private stopWaiting(run: RunChat): void {
    if (run.timer !== undefined) this.clock.clearTimeout(run.timer);
    run.timer = undefined;
    if (run.waitingForBeat && run.onBeat) run.beat?.cancel(run.onBeat);
    run.waitingForBeat = false;
  }

  private onBlock(ev: AgentEventOf<"block">): void {
    const run = this.runFor(ev.runId, ev.sessionKey);
    const replace = ev.data.replace === true && run.blockText !== "";
    if (ev.data.replace) {
      run.blockText = "";
      run.checkpoints.reset();
    }
    run.blockText += ev.data.text;
    const now = this.clock.now();
    this.emit({
      runId: ev.runId,
      sessionKey: run.sessionKey,
      seq: ev.seq,
      state: "delta",
      deltaText: ev.data.text,
      ...(run.checkpoints.carry(run.blockText.length) ? { message: message(run.blockText, now) } : {}),
      ...(replace ? { replace: true } : {}),
    });
  }

  /** Sends what came since the last delta, except an end that could still become the silent token. */
  private flush(runId: string, run: RunChat): void {
    const sendable = run.text.length - run.silent.held();
    if (sendable <= run.sent) return;
    const now = this.clock.now();
    const deltaText = run.unsent.slice(0, sendable - run.sent);
    run.unsent = run.unsent.slice(sendable - run.sent);
    const replace = run.replace;
    if (replace) run.checkpoints.reset();
    run.sent = sendable;
    run.replace = false;
    run.lastFlushAt = now;
    const carry = run.checkpoints.carry(sendable);
    // most deltas carry neither the message nor a replace: the plain object then, not one built by spreads
    this.emit(
      carry || replace
        ? {
            runId,
            sessionKey: run.sessionKey,
            seq: run.pendingSeq,
            state: "delta",
            deltaText,
            ...(carry ? { message: message(run.text.slice(0, sendable), now) } : {}),
            ...(replace ? { replace: true } : {}),
          }
        : { runId, sessionKey: run.sessionKey, seq: run.pendingSeq, state: "delta", deltaText },
    );
  }

  private terminal(ev: AgentEventOf<"lifecycle">, text: string): ChatEventPayload {
    const d = ev.data;
    const base = { runId: ev.runId, sessionKey: ev.sessionKey, seq: ev.seq };
    if (d.phase !== "end" && d.phase !== "error") throw new Error(`not a terminal lifecycle event: ${d.phase}`);
    const stopReason = { stopReason: d.stopReason };
    const usage = d.phase === "end" ? { usage: d.usage } : {};
    if (d.phase === "end") {
      // The same silent-token rule as the final reply: a chat that only said NO_REPLY shows nothing.
      const visible = isSilentReply(text) ? "" : stripTrailingSilentToken(text);
      return {
        ...base,
        state: "final",
        ...(visible ? { message: message(visible, ev.ts) } : {}),
        ...usage,
        ...stopReason,
      };
    }
    const errorMessage = d.error ? { errorMessage: d.error } : {};
    if (d.status === "aborted" || d.kind === "aborted")
      return { ...base, state: "aborted", ...errorMessage, ...stopReason };
    return {
      ...base,
      state: "error",
      ...errorMessage,
      errorKind: chatErrorKind(d.kind, d.status),
      ...usage,
      ...stopReason,
    };
  }

  /** Timers of runs still streaming; called when the gateway stops. */
  dispose(): void {
    for (const run of this.runs.values()) this.stopWaiting(run);
    this.runs.clear();
  }
}

function message(text: string, timestamp: number): ChatMessagePayload {
  return { role: "assistant", content: [{ type: "text", text }], timestamp };
}
