import type { AgentRuntime } from "../agent/runtime.js";
import type { EventBusPort } from "../events/bus-port.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type {
  Diagnostic,
  RecoveryAction,
  RecoveryOutcome,
  SessionDiagnostic,
  SessionRecoveryDiagnostic,
} from "../protocol/diagnostics.js";
import type { QueueSessionView } from "../queue/types.js";
import { ActivityTracker } from "./activity.js";
import { classifySession, type SessionSnapshot, type StuckThresholds } from "./classify.js";

/** What the monitor needs of the session queue (AgentService has it). */
export interface DiagnosedQueue {
  inspectSessions(): QueueSessionView[];
  releaseStaleSession(sessionKey: string, generation: number): RecoveryOutcome;
  abortStalledRun(opts: {
    sessionKey: string;
    runId: string;
    generation: number;
    reason: string;
    drainMs: number;
  }): Promise<RecoveryOutcome>;
}

export interface DiagnosticsMonitorOptions extends StuckThresholds {
  queue: DiagnosedQueue;
  clock: Clock;
  logger: Logger;
  /** every diagnostic, as it is made (the gateway sends it as the `diagnostic` event) */
  onDiagnostic?: (d: Diagnostic) => void;
  /** how many recent diagnostics `list()` keeps (default 200) */
  recentLimit?: number;
}

interface Reported {
  type: SessionDiagnostic["type"];
  generation: number;
  runId: string | undefined;
  /** the next report of this unchanged classification waits until the session is this idle */
  nextIdleMs: number;
}

/** Checks a few times per warn threshold, at most every 5 s (and never in a busy loop). */
export function tickIntervalMs(warnMs: number): number {
  return Math.max(10, Math.min(Math.floor(warnMs / 4), 5000));
}

/**
 * The stuck-session monitor (SPEC 13): one timer on the injected clock, one bus subscription, nothing per event
 * beyond the activity tracker's map write. Each tick classifies the sessions with work, reports what changed (an
 * unchanged classification again only at max(idle + warn, 2 × idle): progressive backoff), and recovers:
 * stale bookkeeping at once, a stalled run once it is idle past the abort threshold.
 */
export class DiagnosticsMonitor {
  readonly thresholds: StuckThresholds;
  private readonly tracker: ActivityTracker;
  private readonly reported = new Map<string, Reported>();
  /** sessionKey → the generation and run an abort was requested for (one abort per stalled run) */
  private readonly aborting = new Map<string, string>();
  private readonly recent: Diagnostic[] = [];
  private readonly recentLimit: number;
  private timer: unknown;
  private unsubscribe: (() => void) | undefined;
  private detachModelCalls: (() => void) | undefined;
  private readonly drainMs: number;

  constructor(private readonly opts: DiagnosticsMonitorOptions) {
    this.thresholds = { warnMs: opts.warnMs, abortMs: opts.abortMs };
    this.tracker = new ActivityTracker(() => opts.clock.now());
    this.recentLimit = opts.recentLimit ?? 200;
    // bounded cleanup after an abort: long enough for a run to unwind, short enough to free its queue soon
    this.drainMs = Math.max(1000, Math.min(opts.warnMs, 30_000));
  }

  /** Starts observing: the bus, the runtime's model calls, and the tick timer. */
  start(bus: EventBusPort, rt?: Pick<AgentRuntime, "modelCalls">): void {
    // this node's runs only: a stalled run can be recovered only where it executes
    this.unsubscribe = bus.subscribeLocal((ev) => this.tracker.onEvent(ev));
    if (rt) {
      rt.modelCalls = this.tracker;
      this.detachModelCalls = () => {
        if (rt.modelCalls === this.tracker) rt.modelCalls = undefined;
      };
    }
    this.arm();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.detachModelCalls?.();
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The activity tracker (tests feed it model calls; the monitor feeds it the bus). */
  get activity(): ActivityTracker {
    return this.tracker;
  }

  /** Sessions classified stalled or stuck now (health's stuckSessions): O(sessions with work), in memory. */
  get stuckSessionCount(): number {
    return this.classifyAll(this.opts.clock.now()).filter((d) => d.type !== "session.long_running").length;
  }

  /** The classification of every session now, and the recent diagnostics (oldest first). */
  list(): { sessions: SessionDiagnostic[]; recent: Diagnostic[] } {
    return { sessions: this.classifyAll(this.opts.clock.now()), recent: [...this.recent] };
  }

  /** One check: classify, report, recover. The timer calls it; tests may too. */
  check(): void {
    const now = this.opts.clock.now();
    const found = this.classifyAll(now);
    const seen = new Set<string>();
    for (const d of found) {
      seen.add(d.sessionKey);
      const report = this.shouldReport(d);
      if (report) this.emit(d);
      // stale bookkeeping is released when reported (so a session recovery cannot fix is retried with the
      // reports' backoff); a stalled run is aborted once, when it passes the abort threshold
      if (d.type === "session.stuck" && report) this.recover(d, "release_session");
      if (d.type === "session.stalled" && d.idleMs >= this.thresholds.abortMs) this.recover(d, "abort_run");
    }
    for (const key of this.reported.keys()) if (!seen.has(key)) this.reported.delete(key);
    for (const key of this.aborting.keys()) if (!seen.has(key)) this.aborting.delete(key);
  }

  private arm(): void {
    this.timer = this.opts.clock.setTimeout(() => {
      try {
        this.check();
      } catch (err) {
        // a diagnostic must never take the gateway down
        this.opts.logger.warn(`stuck-session check failed: ${(err as Error)?.message ?? String(err)}`);
      }
      if (this.timer !== undefined) this.arm();
    }, tickIntervalMs(this.opts.warnMs));
  }

  private classifyAll(now: number): SessionDiagnostic[] {
    const snaps = new Map<string, SessionSnapshot>();
    for (const q of this.opts.queue.inspectSessions()) {
      snaps.set(q.sessionKey, { sessionKey: q.sessionKey, queue: q, activities: [] });
    }
    for (const [key, activities] of this.tracker.bySession()) {
      const snap = snaps.get(key);
      if (snap) snap.activities = activities;
      else snaps.set(key, { sessionKey: key, activities });
    }
    const out: SessionDiagnostic[] = [];
    for (const snap of snaps.values()) {
      const d = classifySession(snap, now, this.thresholds);
      if (d) out.push(d);
    }
    return out;
  }

  /** A new or changed classification at once; the same one again at max(idle + warn, 2 × idle). */
  private shouldReport(d: SessionDiagnostic): boolean {
    const last = this.reported.get(d.sessionKey);
    const changed = !last || last.type !== d.type || last.generation !== d.generation || last.runId !== d.runId;
    if (!changed && d.idleMs < last.nextIdleMs) return false;
    this.reported.set(d.sessionKey, {
      type: d.type,
      generation: d.generation,
      runId: d.runId,
      nextIdleMs: Math.max(d.idleMs + this.thresholds.warnMs, d.idleMs * 2),
    });
    return true;
  }

  private recover(d: SessionDiagnostic, action: RecoveryAction): void {
    const request = (phase: "requested" | "completed", extra: Partial<SessionRecoveryDiagnostic> = {}) =>
      this.emit({
        type: "session.recovery",
        phase,
        action,
        sessionKey: d.sessionKey,
        ...(d.runId ? { runId: d.runId } : {}),
        generation: d.generation,
        cause: d.type,
        ts: this.opts.clock.now(),
        ...extra,
      });
    const completed = (outcome: RecoveryOutcome) => {
      const queued = this.opts.queue.inspectSessions().find((q) => q.sessionKey === d.sessionKey)?.queued ?? 0;
      request("completed", { outcome, queued });
    };
    if (action === "abort_run") {
      const run = `${d.generation}#${d.runId}`;
      if (this.aborting.get(d.sessionKey) === run) return;
      this.aborting.set(d.sessionKey, run);
    }
    request("requested");
    if (action === "release_session") {
      // stale activity no run owns is forgotten; the queue's own stale state is released by the queue
      if (d.runId && !d.owned) this.tracker.forget(d.runId);
      completed(this.opts.queue.releaseStaleSession(d.sessionKey, d.generation));
      return;
    }
    const reason = `stalled: no progress for ${d.idleMs} ms (diagnostics.stuckSessionAbortMs ${this.thresholds.abortMs})`;
    this.opts.queue
      .abortStalledRun({
        sessionKey: d.sessionKey,
        runId: d.runId ?? "",
        generation: d.generation,
        reason,
        drainMs: this.drainMs,
      })
      .then(completed, (err) => {
        this.opts.logger.warn(`stuck-session recovery of ${d.sessionKey} failed: ${(err as Error)?.message ?? err}`);
        completed("nothing_to_do");
      });
  }

  private emit(d: Diagnostic): void {
    this.recent.push(d);
    if (this.recent.length > this.recentLimit) this.recent.splice(0, this.recent.length - this.recentLimit);
    const { type, ...fields } = d;
    this.opts.logger.warn(`diagnostic ${type}`, fields as Record<string, unknown>);
    try {
      this.opts.onDiagnostic?.(d);
    } catch (err) {
      this.opts.logger.warn(`diagnostic listener failed: ${(err as Error)?.message ?? String(err)}`);
    }
  }
}
