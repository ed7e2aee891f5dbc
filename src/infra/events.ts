/**
 * One emitter for every run event. The runner publishes; the gateway broadcast, the CLI renderer, the event
 * log and tests subscribe. `seq` is assigned here, per run, from 1 with no gaps, so every subscriber sees the
 * same numbering no matter when it subscribed.
 */

import type { AgentEvent, AgentStream } from "../protocol/events.js";

export type { AgentEvent, AgentStream };

export type AgentEventListener = (event: AgentEvent) => void;

export class AgentEventBus {
  private readonly listeners = new Set<AgentEventListener>();
  private readonly seqByRun = new Map<string, number>();
  private readonly now: () => number;

  constructor(opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
  }

  subscribe(listener: AgentEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Emits with the next seq of the run. A listener that throws is isolated from the others and the run. */
  emit(runId: string, sessionKey: string, stream: AgentStream, data: Record<string, unknown>): AgentEvent {
    const seq = (this.seqByRun.get(runId) ?? 0) + 1;
    this.seqByRun.set(runId, seq);
    const event: AgentEvent = { runId, seq, stream, ts: this.now(), sessionKey, data };
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        process.emitWarning(`agent event listener failed: ${(err as Error)?.message ?? String(err)}`);
      }
    }
    return event;
  }

  /** Continue numbering after a restart (events already persisted for this run). */
  resumeSeq(runId: string, lastSeq: number): void {
    this.seqByRun.set(runId, lastSeq);
  }

  /** Forget a finished run's counter; keeps the map from growing with the number of runs. */
  endRun(runId: string): void {
    this.seqByRun.delete(runId);
  }
}
