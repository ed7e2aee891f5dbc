/**
 * One emitter for every run event. The runner publishes; the gateway broadcast, the CLI renderer, the event
 * log and tests subscribe. `seq` is assigned here, per run, from 1 with no gaps, so every subscriber sees the
 * same numbering no matter when it subscribed. The event shapes are the protocol's (protocol/agent-events.ts).
 */
import type { AgentEvent, AgentEventData, AgentEventOf, AgentStream } from "../protocol/agent-events.js";

export type { AgentEvent, AgentEventData, AgentEventOf, AgentStream };

export type AgentEventListener = (event: AgentEvent) => void;

export class AgentEventBus {
  private readonly listeners = new Set<AgentEventListener>();
  private readonly runListeners = new Map<string, Set<AgentEventListener>>();
  private readonly seqByRun = new Map<string, number>();
  private readonly now: () => number;

  constructor(opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
  }

  subscribe(listener: AgentEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Listens to one run's events only. A run that watches its own events this way costs nothing per event of the
   * other runs (a `subscribe` per run would make every event cost O(concurrent runs)).
   */
  subscribeRun(runId: string, listener: AgentEventListener): () => void {
    let set = this.runListeners.get(runId);
    if (!set) {
      set = new Set();
      this.runListeners.set(runId, set);
    }
    set.add(listener);
    const listeners = set;
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.runListeners.get(runId) === listeners) this.runListeners.delete(runId);
    };
  }

  /** Emits with the next seq of the run. A listener that throws is isolated from the others and the run. */
  emit<S extends AgentStream>(runId: string, sessionKey: string, stream: S, data: AgentEventData[S]): AgentEventOf<S> {
    const seq = (this.seqByRun.get(runId) ?? 0) + 1;
    this.seqByRun.set(runId, seq);
    const event: AgentEventOf<S> = { runId, seq, stream, ts: this.now(), sessionKey, data };
    for (const listener of this.listeners) notify(listener, event as AgentEvent);
    const own = this.runListeners.get(runId);
    if (own) for (const listener of own) notify(listener, event as AgentEvent);
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

function notify(listener: AgentEventListener, event: AgentEvent): void {
  try {
    listener(event);
  } catch (err) {
    process.emitWarning(`agent event listener failed: ${(err as Error)?.message ?? String(err)}`);
  }
}
