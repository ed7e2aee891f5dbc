import { isSilentReply, stripTrailingSilentToken } from "../agent/reply.js";
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
  /** every delta of the run so far */
  text: string;
  /** deltas not yet sent as a chat delta */
  pending: string;
  /** seq of the newest assistant event folded into `pending` */
  pendingSeq: number;
  lastFlushAt: number;
  timer: unknown;
  /** the next delta replaces what the client has shown (a retry or compaction restarted the answer) */
  replace: boolean;
}

/**
 * SPEC 12: the agent stream projected to chat events. Assistant deltas are buffered into `delta` messages, sent at
 * most every `intervalMs` (the first one at once, so a chat shows the reply starting) and always flushed before the
 * terminal event; lifecycle end → `final`, lifecycle error → `aborted` or `error` with a kind.
 */
export class ChatProjector {
  private readonly runs = new Map<string, RunChat>();
  private readonly emit: (payload: ChatEventPayload) => void;
  private readonly clock: Clock;
  private readonly intervalMs: number;

  constructor(opts: { emit: (payload: ChatEventPayload) => void; clock: Clock; intervalMs: number }) {
    this.emit = opts.emit;
    this.clock = opts.clock;
    this.intervalMs = opts.intervalMs;
  }

  onAgentEvent(ev: AgentEvent): void {
    if (ev.stream === "message") {
      // A message the model sent with the `message` tool is chat text too: its own paragraph in the run's reply.
      this.onAgentEvent({ ...ev, stream: "assistant", data: { text: ev.data.text, delta: `${ev.data.text}\n\n` } });
      return;
    }
    if (ev.stream === "assistant") {
      const delta = ev.data.delta;
      if (typeof delta !== "string" || delta === "") return;
      let run = this.runs.get(ev.runId);
      if (!run) {
        run = {
          sessionKey: ev.sessionKey,
          text: "",
          pending: "",
          pendingSeq: 0,
          lastFlushAt: -Infinity,
          timer: undefined,
          replace: false,
        };
        this.runs.set(ev.runId, run);
      }
      if (ev.data.replace) {
        // Text already sent is void: only a delta that says `replace` may take it back (SPEC 10).
        run.replace = run.replace || run.text.length > run.pending.length;
        run.text = "";
        run.pending = "";
      }
      run.text += delta;
      run.pending += delta;
      run.pendingSeq = ev.seq;
      if (run.timer !== undefined) return;
      const wait = run.lastFlushAt + this.intervalMs - this.clock.now();
      if (wait <= 0) this.flush(ev.runId, run);
      else {
        const r = run;
        run.timer = this.clock.setTimeout(() => {
          r.timer = undefined;
          this.flush(ev.runId, r);
        }, wait);
      }
      return;
    }
    if (ev.stream !== "lifecycle") return;
    const phase = ev.data.phase;
    if (phase !== "end" && phase !== "error") return;
    const run = this.runs.get(ev.runId);
    if (run) {
      if (run.timer !== undefined) this.clock.clearTimeout(run.timer);
      run.timer = undefined;
      this.flush(ev.runId, run);
      this.runs.delete(ev.runId);
    }
    this.emit(this.terminal(ev, run?.text ?? ""));
  }

  private flush(runId: string, run: RunChat): void {
    if (run.pending === "") return;
    const now = this.clock.now();
    const deltaText = run.pending;
    const replace = run.replace;
    run.pending = "";
    run.replace = false;
    run.lastFlushAt = now;
    this.emit({
      runId,
      sessionKey: run.sessionKey,
      seq: run.pendingSeq,
      state: "delta",
      deltaText,
      message: message(run.text, now),
      ...(replace ? { replace: true } : {}),
    });
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
    for (const run of this.runs.values()) if (run.timer !== undefined) this.clock.clearTimeout(run.timer);
    this.runs.clear();
  }
}

function message(text: string, timestamp: number): ChatMessagePayload {
  return { role: "assistant", content: [{ type: "text", text }], timestamp };
}
