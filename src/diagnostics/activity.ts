import type { ModelCallObserver } from "../agent/runtime.js";
import type { AgentEvent } from "../infra/events.js";
import type { SessionActivityKind } from "../protocol/diagnostics.js";

/** What one run was last seen doing, built from its events (and its model calls) alone. */
export interface RunActivity {
  readonly runId: string;
  readonly sessionKey: string;
  /** when its last progress event (reply, tool, status, block, lock, model call) was seen */
  lastProgressAt: number;
  /** tool calls started and not finished */
  openTools: number;
  toolName?: string;
  inModelCall: boolean;
  /** what a lifecycle `waiting` says the run waits for, until its next progress */
  waitingFor?: string;
}

/** The activity's kind as the classifier reads it: a wait wins, then a tool call, then a model call. */
export function activityKind(a: RunActivity): Exclude<SessionActivityKind, "queued"> {
  if (a.waitingFor !== undefined) return "waiting";
  if (a.openTools > 0) return "tool";
  if (a.inModelCall) return "model";
  return "run";
}

/**
 * Per-run progress, observed on the one event bus: every event is one Map lookup and a few field writes, no timer.
 * A run is tracked from its first event to its terminal lifecycle event; a run that never gets one stays here
 * as activity nothing owns, which is exactly what the classifier reports as stale (and recovery forgets).
 */
export class ActivityTracker implements ModelCallObserver {
  private readonly runs = new Map<string, RunActivity>();

  constructor(private readonly now: () => number) {}

  onEvent(ev: AgentEvent): void {
    // receipts are about the message they name, which is not running yet: not the active run's progress
    if (ev.stream === "queue") return;
    if (ev.stream === "lifecycle" && (ev.data.phase === "end" || ev.data.phase === "error")) {
      this.runs.delete(ev.runId);
      return;
    }
    const a = this.entry(ev.runId, ev.sessionKey);
    a.lastProgressAt = ev.ts;
    if (ev.stream === "lifecycle" && ev.data.phase === "waiting") {
      // "waiting for the model" follows a lock wait: the lock is held, the wait is over
      a.waitingFor = ev.data.for === "model" ? undefined : ev.data.for;
      return;
    }
    // a retry's backoff is a bounded wait of its own (until the next model call starts)
    a.waitingFor = ev.stream === "lifecycle" && ev.data.phase === "retry" ? "retry" : undefined;
    // compaction summarizes the history with a model call of its own: owned model work, like the run's calls
    if (ev.stream === "compaction") a.inModelCall = ev.data.phase === "start";
    if (ev.stream === "tool") {
      if (ev.data.phase === "start") {
        a.openTools++;
        a.toolName = ev.data.name;
      } else if (ev.data.phase === "result") {
        a.openTools = Math.max(0, a.openTools - 1);
        if (a.openTools === 0) a.toolName = undefined;
      }
    }
  }

  started(runId: string, sessionKey: string): void {
    const a = this.entry(runId, sessionKey);
    a.inModelCall = true;
    a.waitingFor = undefined;
    a.lastProgressAt = this.now();
  }

  ended(runId: string, _sessionKey: string): void {
    const a = this.runs.get(runId);
    if (!a) return;
    a.inModelCall = false;
    a.lastProgressAt = this.now();
  }

  /** Recovery of stale activity: the run is no longer tracked. */
  forget(runId: string): void {
    this.runs.delete(runId);
  }

  /** Every tracked run, grouped by session. */
  bySession(): Map<string, RunActivity[]> {
    const out = new Map<string, RunActivity[]>();
    for (const a of this.runs.values()) {
      const list = out.get(a.sessionKey);
      if (list) list.push(a);
      else out.set(a.sessionKey, [a]);
    }
    return out;
  }

  get size(): number {
    return this.runs.size;
  }

  private entry(runId: string, sessionKey: string): RunActivity {
    let a = this.runs.get(runId);
    if (!a) {
      a = { runId, sessionKey, lastProgressAt: this.now(), openTools: 0, inModelCall: false };
      this.runs.set(runId, a);
    }
    return a;
  }
}
