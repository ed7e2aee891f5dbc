import { KeyedSerial } from "../infra/keyed-serial.js";
import type { RecoveryOutcome } from "../protocol/diagnostics.js";
import type { AgentFinal, AgentRequest, WaitResult } from "../protocol/run.js";
import type { RunRecord } from "../storage/types.js";
import { abortSession } from "./abort.js";
import { adoptRuns } from "./adopt.js";
import { scheduleNext } from "./debounce.js";
import { RunNotFoundError } from "./errors.js";
import { finalFromRecord, waitResultOf } from "./finals.js";
import { inspectSessions, queuedInputs } from "./inspect.js";
import { acceptMessage } from "./intake.js";
import { startNextTurn } from "./next-turn.js";
import { recoverRuns, reportEnded } from "./recovery.js";
import { waitRemoteEnd } from "./remote-end.js";
import { abortStalledRun, releaseStaleSession } from "./session-recovery.js";
import type {
  AcceptedRun,
  AdoptedRun,
  IntakeGate,
  QueueCluster,
  QueueContext,
  QueueDeps,
  QueueSessionView,
  RunOrigin,
} from "./types.js";
import { UnrecordedEnds } from "./unrecorded-ends.js";

/**
 * The per-session queue (SPEC 2): durable accept, queue modes, debounce, collect, overflow, receipts, waiting,
 * aborting, recovery and drain. Every accepted record reaches a terminal status with a reason: ran, steered into
 * a run, collected, dropped (with why), aborted, or failed by a gateway restart.
 *
 * Per session at most one turn is active here; the session lane below still serializes anything else that runs
 * in the session (and the write lock catches other processes). Turns run only through `deps.runTurn`.
 */
export class SessionQueue {
  private readonly ctx: QueueContext;

  constructor(deps: QueueDeps) {
    const ctx: QueueContext = {
      deps,
      live: new Map(),
      sessions: new Map(),
      draining: false,
      generations: 0,
      accepting: new KeyedSerial(),
      recoveredOrigins: new Map(),
      unrecorded: new UnrecordedEnds({
        store: deps.store,
        clock: deps.clock,
        warn: (message) => process.emitWarning(`a turn's end could not be recorded: ${message}`),
      }),
      schedule: (s) => scheduleNext(ctx, s, (due) => startNextTurn(ctx, due)),
    };
    this.ctx = ctx;
  }

  /** Several nodes on Postgres: intake, idle sessions and recovery go through the cluster layer (src/cluster/). */
  attachCluster(cluster: QueueCluster): void {
    this.ctx.cluster = cluster;
  }

  /** Inputs this node adopted join their sessions' queues, in the order given; how many joined. */
  adopt(runs: readonly AdoptedRun[]): number {
    if (this.ctx.draining) return 0;
    return adoptRuns(this.ctx, runs);
  }

  /** Whether the run's turn started in this process: it is its session's running turn (waiting for lanes, or running). */
  launched(runId: string): boolean {
    const phase = this.ctx.live.get(runId)?.phase;
    return phase === "queued" || phase === "running";
  }

  /** Whether the session has work in this process (a turn, or inputs waiting): its lease must be kept. */
  hasWork(sessionKey: string): boolean {
    return this.ctx.sessions.has(sessionKey);
  }

  /** Ends a run that did not run to its end here (another node's, lost): record, lifecycle error event, end. */
  reportEnded(run: RunRecord, ended: { stopReason: string; error: string }): Promise<void> {
    return reportEnded(this.ctx, run, ended);
  }

  /** Several gateway nodes share the store: a run not live here may be live on another node. */
  private get spansNodes(): boolean {
    return this.ctx.cluster !== undefined || this.ctx.deps.bus.spansNodes;
  }

  /** Whether drain has begun (nothing new starts here). */
  get draining(): boolean {
    return this.ctx.draining;
  }

  get activeRunCount(): number {
    let n = 0;
    for (const s of this.ctx.sessions.values()) if (s.active) n++;
    return n;
  }

  /** Number of sessions with queued or active work held in memory (idle sessions are dropped). */
  get busySessionCount(): number {
    return this.ctx.sessions.size;
  }

  /** Run ids of the session's active turn (host and messages merged into it) and of its queued messages. */
  activeRuns(sessionKey: string): string[] {
    const s = this.ctx.sessions.get(sessionKey);
    if (!s) return [];
    const ids: string[] = [];
    if (s.active) ids.push(s.active.host.runId, ...s.active.merged.map((r) => r.runId));
    for (const r of s.pending) ids.push(r.runId);
    return ids;
  }

  /** What the session is doing now: the run of its active turn (if any) and how many messages wait behind it. */
  activity(sessionKey: string): { activeRunId?: string; queued: number } {
    const s = this.ctx.sessions.get(sessionKey);
    if (!s) return { queued: 0 };
    return { ...(s.active ? { activeRunId: s.active.host.runId } : {}), queued: queuedInputs(s) };
  }

  /** Inputs accepted and not started yet, over every session (O(sessions with work)). */
  get queueDepth(): number {
    let n = 0;
    for (const s of this.ctx.sessions.values()) n += queuedInputs(s);
    return n;
  }

  /** Every session with work, as the stuck-session diagnostics see it. */
  inspect(): QueueSessionView[] {
    return inspectSessions(this.ctx);
  }

  /** Stuck-session recovery of stale bookkeeping (queue/session-recovery.ts). */
  releaseStaleSession(sessionKey: string, generation: number): RecoveryOutcome {
    return releaseStaleSession(this.ctx, sessionKey, generation);
  }

  /** Stuck-session recovery of a stalled run: abort, drain, release (queue/session-recovery.ts). */
  abortStalledRun(opts: {
    sessionKey: string;
    runId: string;
    generation: number;
    reason: string;
    drainMs: number;
  }): Promise<RecoveryOutcome> {
    return abortStalledRun(this.ctx, opts);
  }

  /** Validates, stores the session and run record, then routes by queue mode; resolves once stored and routed. */
  accept(req: AgentRequest, origin?: RunOrigin, gate?: IntakeGate): Promise<AcceptedRun> {
    return acceptMessage(this.ctx, req, origin, gate);
  }

  /**
   * Who started the run, from memory: while it is live, or (for a run of an earlier process that recovery ended)
   * from the record recovery read. Synchronous: the audit ledger asks for every row it makes.
   */
  originOf(runId: string): RunOrigin | undefined {
    const live = this.ctx.live.get(runId);
    if (live) return live.origin;
    return this.ctx.recoveredOrigins.get(runId);
  }

  /** The agent of a live run (accepted and not ended); undefined otherwise. */
  agentOf(runId: string): string | undefined {
    return this.ctx.live.get(runId)?.req.agentId;
  }

  /** Resolves with the final result; for a finished run (also from before a restart) at once. */
  async final(runId: string): Promise<AgentFinal> {
    const live = this.ctx.live.get(runId);
    if (live) return live.done.promise;
    const run = this.ctx.unrecorded.overlay(await this.ctx.deps.store.getRun(runId));
    if (!run) throw new RunNotFoundError(runId);
    const final = finalFromRecord(run);
    if (final) return final;
    // another node's run (gateway nodes on one Postgres): its end is heard through the bus, or read from its record
    if (this.spansNodes) {
      const ended = await waitRemoteEnd(this.ctx, runId, Number.POSITIVE_INFINITY);
      const remote = ended && finalFromRecord(ended);
      if (remote) return remote;
    }
    throw new Error(`run ${runId} is ${run.status} but not active in this process`);
  }

  /** Waits up to timeoutMs for the run to end; never stops it. */
  async wait(runId: string, timeoutMs = 30000): Promise<WaitResult> {
    const { store, clock } = this.ctx.deps;
    const live = this.ctx.live.get(runId);
    // an end the store could not take yet (a full disk) is read in place of its record
    const { unrecorded } = this.ctx;
    if (!live) {
      const run = unrecorded.overlay(await store.getRun(runId));
      if (!run) throw new RunNotFoundError(runId);
      if (run.status !== "queued" && run.status !== "running") return waitResultOf(run);
      // a run another process owns: another node's (gateway nodes on one Postgres), or `loopgate agent --local` on
      // this state dir; it runs (or waits) there, and is waited for like one of ours, its record read until it ends
      const ended = await waitRemoteEnd(this.ctx, runId, timeoutMs);
      return waitResultOf(ended ?? (await store.getRun(runId)) ?? run);
    }
    let timer: unknown;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = clock.setTimeout(() => resolve("timeout"), Math.max(0, timeoutMs));
    });
    const winner = await Promise.race([live.done.promise, timedOut]);
    clock.clearTimeout(timer);
    if (winner === "timeout") {
      const queued = live.phase === "pending" || live.phase === "queued";
      return {
        runId,
        status: queued ? "pending" : "timeout",
        ...(live.startedAt ? { startedAt: live.startedAt } : {}),
      };
    }
    const run = unrecorded.overlay(await store.getRun(runId));
    if (!run) throw new RunNotFoundError(runId);
    return waitResultOf(run);
  }

  /** chat.abort: queued turns of the session first, then the active run (or just `runId`). */
  abort(sessionKey: string, runId?: string): { aborted: string[] } {
    return { aborted: abortSession(this.ctx, sessionKey, runId) };
  }

  recover(): Promise<{ failed: string[]; requeued: string[] }> {
    return recoverRuns(this.ctx);
  }

  /**
   * Stops accepting; gives running runs `graceMs` to finish, then aborts them and waits for their records. Ends the
   * store refused meanwhile get a last chance to be written, so the next start does not find them `queued`.
   */
  async drain(graceMs: number): Promise<void> {
    await this.drainRuns(graceMs);
    await this.ctx.unrecorded.flush();
    this.ctx.unrecorded.stop();
  }

  private async drainRuns(graceMs: number): Promise<void> {
    const { ctx } = this;
    const { clock } = ctx.deps;
    ctx.draining = true;
    // several nodes: only the turns running here are waited for; what waits behind them goes to another node (the
    // cluster's hand-off after this), so it would never end here
    const pending = ctx.cluster
      ? [...ctx.sessions.values()].flatMap((s) => (s.active ? [s.active.host.done.promise] : []))
      : [...ctx.live.values()].map((r) => r.done.promise);
    if (pending.length === 0) return;
    let timer: unknown;
    const grace = new Promise<void>((resolve) => {
      timer = clock.setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all(pending), grace]);
    clock.clearTimeout(timer);
    // Queued inputs stay "queued" in the store: the next start runs them (recover()). Active runs are aborted.
    for (const s of ctx.sessions.values()) {
      if (s.timer !== undefined) clock.clearTimeout(s.timer);
      s.active?.host.controller?.abort(new Error("gateway shutting down"));
    }
    const active = [...ctx.sessions.values()].flatMap((s) => (s.active ? [s.active.host.done.promise] : []));
    await Promise.all(active);
  }
}
