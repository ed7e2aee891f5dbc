import type { AgentEvent, AgentEventData, AgentEventOf, AgentStream } from "../protocol/agent-events.js";

export type AgentEventListener = (event: AgentEvent) => void;

/**
 * The event bus port: where run events are published and heard. The in-process implementation is `AgentEventBus`
 * (infra/events.ts); a cross-process one (Postgres LISTEN/NOTIFY carrying a pointer to the stored event) implements
 * the same contract, checked by events/bus.conformance.ts.
 *
 * Guarantees every implementation keeps:
 * - `emit` numbers a run's events from 1 with no gap (after `resumeSeq(runId, n)`: from n + 1), and every
 *   subscriber sees the same number for the same event, whenever it subscribed.
 * - A run's events reach each listener in seq order.
 * - A listener that throws is isolated: the other listeners and the emitter go on.
 * - `subscribeRun` listeners hear only their run, wherever it executes; `subscribe` listeners hear every run this
 *   process emits and the runs of other nodes that something here watches (`watchRun`, `watchSession`, a
 *   `subscribeRun` listener); `subscribeLocal` listeners hear only the runs this process emits (on one node, every
 *   run is local and the watches cost nothing).
 * - `endRun` is the run's completion: its `onRunEnd` listeners hear it once, and the run's counter is forgotten
 *   (an emit after it starts again from 1 unless `resumeSeq` says otherwise).
 */
export interface EventBusPort {
  /**
   * True when the bus also carries runs executing in other processes (gateway nodes on one Postgres). Then a run
   * that is not live here may still be running elsewhere, and its `onRunEnd` listeners hear when it ends there.
   */
  readonly spansNodes: boolean;
  /**
   * Hears every run this process emits, and the runs of other nodes while they are watched (a node reads another
   * node's events only for a client of its own that follows them); returns the unsubscribe.
   */
  subscribe(listener: AgentEventListener): () => void;
  /**
   * A client here follows this run: while any watch of it is held, a run executing on another node is followed and
   * its events reach the `subscribe` listeners, from seq 1 when the watch began mid-run. Reference-counted; returns
   * the release. Costs nothing for a run this process emits.
   */
  watchRun(runId: string): () => void;
  /** The same for every run of one session, including those that start later. Reference-counted; returns the release. */
  watchSession(sessionKey: string): () => void;
  /**
   * Hears only the runs this process emits. For whoever acts once per event where the run executes: the run-event
   * writer (a remote event is already stored), the audit ledger, run-log lines, the stuck-session monitor.
   */
  subscribeLocal(listener: AgentEventListener): () => void;
  /** Hears one run's events only; costs nothing per event of the other runs. Returns the unsubscribe. */
  subscribeRun(runId: string, listener: AgentEventListener): () => void;
  /** Publishes with the run's next seq and returns the event as the subscribers saw it. */
  emit<S extends AgentStream>(runId: string, sessionKey: string, stream: S, data: AgentEventData[S]): AgentEventOf<S>;
  /** Continues a run's numbering after `lastSeq` (events already stored for it, e.g. before a restart). */
  resumeSeq(runId: string, lastSeq: number): void;
  /** The run is complete: its end listeners hear it, and its counter is dropped. */
  endRun(runId: string): void;
  /** Hears the completion of one run (once); returns the unsubscribe. */
  onRunEnd(runId: string, listener: () => void): () => void;
}
