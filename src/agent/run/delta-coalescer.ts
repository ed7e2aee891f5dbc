import type { Beat } from "../../infra/cadence.js";
import type { AgentEventData, AgentStream } from "../../protocol/agent-events.js";
import type { RunEmitter } from "./events.js";

/** The streams whose consecutive events merge: both carry `{text?, delta, replace?}`. */
type DeltaStream = "assistant" | "thinking";
type DeltaData = AgentEventData[DeltaStream];

/**
 * Coalesces a run's streamed deltas at the source (`agents.defaults.streamCoalesceMs`), so every consumer of the
 * bus — the event store writer, the broadcaster, the chat projection, each subscriber's socket — pays once per
 * frame instead of once per model chunk. At a thousand concurrent streams each of those per-event costs is what
 * decides how many streams one core carries (docs/architecture.md, "Streaming: what one token costs").
 *
 * The rule, per run:
 * - the run's beat (infra/cadence.ts) comes every `windowMs`, shared with the runs of its phase; a delta that comes when nothing of
 *   the run went out since the last beat goes out at once (a reply's first token, and every token of a slow
 *   stream, are never delayed);
 * - one that comes after something did is held, and deltas arriving behind it are appended to it; the held event
 *   goes out at the next beat, so no delta waits longer than `windowMs`, a run sends about one event per beat, and
 *   every run's held deltas leave together;
 * - any other event of the run (a tool call, a block, the lifecycle end, a switch between the answer and the
 *   reasoning), a `replace` delta and the end of an assistant message (`flush`) send what is held first: order
 *   and the per-run seq are unchanged, and nothing is dropped.
 *
 * A merged event is what the client would have built from its parts: `delta` is the parts' deltas joined; `text`
 * (a checkpoint, present when one of the parts carried it) is the last carried `text` plus the deltas after it;
 * `replace` is the first part's (a `replace` part always starts a new held event).
 */
export class DeltaCoalescer implements RunEmitter {
  private heldStream: DeltaStream | undefined;
  private heldDelta = "";
  private heldText: string | undefined;
  private heldReplace = false;
  /** the beat slot of the last event that went out */
  private lastSentSlot = Number.NEGATIVE_INFINITY;
  private waitingForBeat = false;
  private readonly onBeat = () => {
    this.waitingForBeat = false;
    this.flush();
  };

  constructor(
    private readonly base: RunEmitter,
    private readonly beat: Beat,
  ) {}

  emit<S extends AgentStream>(stream: S, data: AgentEventData[S]): void {
    if (stream === "assistant" || stream === "thinking") {
      this.delta(stream, data as DeltaData);
      return;
    }
    this.flush();
    this.base.emit(stream, data);
  }

  /** Sends the held delta now (the assistant message ended, or the run is over). */
  flush(): void {
    const stream = this.heldStream;
    if (stream === undefined) return;
    if (this.waitingForBeat) {
      this.waitingForBeat = false;
      this.beat.cancel(this.onBeat);
    }
    const text = this.heldText;
    // most held deltas carry neither a checkpoint nor a replace: the plain object then, not one built by spreads
    const data: DeltaData =
      text === undefined && !this.heldReplace
        ? { delta: this.heldDelta }
        : {
            ...(text !== undefined ? { text } : {}),
            delta: this.heldDelta,
            ...(this.heldReplace ? { replace: true } : {}),
          };
    this.heldStream = undefined;
    this.heldDelta = "";
    this.heldText = undefined;
    this.heldReplace = false;
    this.lastSentSlot = this.beat.slot;
    this.base.emit(stream, data);
  }

  private delta(stream: DeltaStream, data: DeltaData): void {
    if (this.heldStream !== undefined) {
      if (this.heldStream === stream && data.replace !== true) {
        this.heldDelta += data.delta;
        if (data.text !== undefined) this.heldText = data.text;
        else if (this.heldText !== undefined) this.heldText += data.delta;
        return;
      }
      this.flush();
    }
    const slot = this.beat.slot;
    if (slot > this.lastSentSlot) {
      this.lastSentSlot = slot;
      this.base.emit(stream, data);
      return;
    }
    this.heldStream = stream;
    this.heldDelta = data.delta;
    this.heldText = data.text;
    this.heldReplace = data.replace === true;
    this.waitingForBeat = true;
    this.beat.next(this.onBeat);
  }
}

/** The run's emitter, coalescing deltas on `beat` (none: every model chunk is its own event, no wrapper). */
export function coalescingEmitter(base: RunEmitter, beat: Beat | undefined): RunEmitter {
  return beat ? new DeltaCoalescer(base, beat) : base;
}
