/**
 * One emitter for every run event. The runner publishes; the gateway broadcast, the CLI renderer, the event
 * log and tests subscribe. `seq` is assigned here, per run, from 1 with no gaps, so every subscriber sees the
 * same numbering no matter when it subscribed. The event shapes are the protocol's (protocol/agent-events.ts).
 */
import type { AgentEventListener, EventBusPort } from "../events/bus-port.js";
import type { AgentEvent, AgentEventData, AgentEventOf, AgentStream } from "../protocol/agent-events.js";
import { addKeyedListener } from "./keyed-listeners.js";

export type { AgentEvent, AgentEventData, AgentEventListener, AgentEventOf, AgentStream, EventBusPort };

/** The in-process EventBusPort: one per process, listeners called synchronously in the emitter's turn. */
export class AgentEventBus implements EventBusPort {
  private readonly listeners = new Set<AgentEventListener>();
  private readonly runListeners = new Map<string, Set<AgentEventListener>>();
  private readonly seqByRun = new Map<string, number>();
  private readonly endListeners = new Map<string, Set<() => void>>();
  private readonly now: () => number;
  /** one process: every run is local */
  readonly spansNodes: boolean = false;

  constructor(opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
  }

  subscribe(listener: AgentEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every run of this bus is this process's, so local listeners are plain listeners (no cost per event). */
  subscribeLocal(listener: AgentEventListener): () => void {
    return this.subscribe(listener);
  }

  /** One process: every run is local and already heard by `subscribe`, so there is nothing to follow. */
  watchRun(_runId: string): () => void {
    return noop;
  }

  watchSession(_sessionKey: string): () => void {
    return noop;
  }

  /**
   * Listens to one run's events only. A run that watches its own events this way costs nothing per event of the
   * other runs (a `subscribe` per run would make every event cost O(concurrent runs)).
   */
  subscribeRun(runId: string, listener: AgentEventListener): () => void {
    return addKeyedListener(this.runListeners, runId, listener);
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

  /** The run is complete: its end listeners hear it; its counter is forgotten (the map does not grow with runs). */
  endRun(runId: string): void {
    this.seqByRun.delete(runId);
    const ends = this.endListeners.get(runId);
    if (!ends) return;
    this.endListeners.delete(runId);
    for (const listener of ends) notifyEnd(listener);
  }

  onRunEnd(runId: string, listener: () => void): () => void {
    return addKeyedListener(this.endListeners, runId, listener);
  }
}

const noop = (): void => {};

function notifyEnd(listener: () => void): void {
  try {
    listener();
  } catch (err) {
    process.emitWarning(`run end listener failed: ${(err as Error)?.message ?? String(err)}`);
  }
}

function notify(listener: AgentEventListener, event: AgentEvent): void {
  try {
    listener(event);
  } catch (err) {
    process.emitWarning(`agent event listener failed: ${(err as Error)?.message ?? String(err)}`);
  }
}
