import type { SessionDiagnostic } from "../protocol/diagnostics.js";
import type { QueueSessionView } from "../queue/types.js";
import { activityKind, type RunActivity } from "./activity.js";

/** `diagnostics.stuckSessionWarnMs` and the resolved `diagnostics.stuckSessionAbortMs`. */
export interface StuckThresholds {
  warnMs: number;
  abortMs: number;
}

/** One session as the classifier sees it: the queue's bookkeeping and the runs seen active on the bus. */
export interface SessionSnapshot {
  sessionKey: string;
  /** absent when the queue holds nothing for the session */
  queue?: QueueSessionView;
  activities: readonly RunActivity[];
}

/** `stuckSessionAbortMs` when it is not set: at least 5 minutes and 3 × the warn threshold (SPEC 13). */
export function defaultAbortMs(warnMs: number): number {
  return Math.max(300_000, 3 * warnMs);
}

/**
 * Classifies one session at `now` (SPEC 13), or answers undefined while it is fine: nothing in processing, or
 * progress seen within the warn threshold. Pure: the monitor and `diagnostics.list` call it with their own time.
 *
 * - Activity on the bus that no live run of the queue owns, quiet past the warn threshold → `session.stuck` (it is
 *   not hidden as long-running). So is a session the queue marks busy whose run already ended, and queued inputs
 *   with nothing active and no drain timer that will still fire.
 * - An owned run waiting for a lane, the session lock or an approval → `session.long_running`: waits have their
 *   own timeouts and never count as a stall.
 * - An owned model or tool call → `session.long_running` until the abort threshold, `session.stalled` from it.
 * - An owned run doing neither (between calls) without progress past the warn threshold → `session.stalled`.
 */
export function classifySession(snap: SessionSnapshot, now: number, t: StuckThresholds): SessionDiagnostic | undefined {
  const q = snap.queue;
  const active = q?.active && q.active.phase !== "ended" ? q.active : undefined;
  const owns = (a: RunActivity) =>
    active !== undefined && (a.runId === active.runId || active.merged.includes(a.runId));
  const base = {
    sessionKey: snap.sessionKey,
    generation: q?.generation ?? 0,
    queued: q?.queued ?? 0,
    ts: now,
  };
  const processingMs = (since: number) => Math.max(0, now - (q?.processingSince ?? since));

  const stale = snap.activities
    .filter((a) => !owns(a) && now - a.lastProgressAt >= t.warnMs)
    .sort((a, b) => a.lastProgressAt - b.lastProgressAt)[0];
  if (stale) {
    const kind = activityKind(stale);
    return {
      ...base,
      type: "session.stuck",
      runId: stale.runId,
      activity: kind,
      ...(stale.toolName ? { toolName: stale.toolName } : {}),
      ...(stale.waitingFor ? { waitingFor: stale.waitingFor } : {}),
      owned: false,
      idleMs: now - stale.lastProgressAt,
      processingMs: processingMs(stale.lastProgressAt),
      reason: `${kind} activity of run ${stale.runId} that no live run owns`,
    };
  }
  if (!q) return undefined;

  if (q.active && q.active.phase === "ended") {
    const idleMs = now - q.processingSince;
    if (idleMs < t.warnMs) return undefined;
    return {
      ...base,
      type: "session.stuck",
      runId: q.active.runId,
      activity: "run",
      owned: false,
      idleMs,
      processingMs: idleMs,
      reason: `marked busy, but its run ${q.active.runId} already ended`,
    };
  }

  if (active) {
    const own = snap.activities.find((a) => a.runId === active.runId);
    const lastProgressAt = Math.max(own?.lastProgressAt ?? 0, q.processingSince);
    const idleMs = now - lastProgressAt;
    if (idleMs < t.warnMs) return undefined;
    // no event of the run yet: it has not got its lanes (a lane wait is a phase of its own)
    const kind = own ? activityKind(own) : "waiting";
    const waitingFor = own ? own.waitingFor : "lane";
    const common = {
      ...base,
      runId: active.runId,
      activity: kind,
      ...(own?.toolName && kind === "tool" ? { toolName: own.toolName } : {}),
      ...(kind === "waiting" && waitingFor ? { waitingFor } : {}),
      owned: true,
      idleMs,
      processingMs: now - q.processingSince,
    };
    if (kind === "waiting") {
      return { ...common, type: "session.long_running", reason: `waiting for ${waitingFor ?? "something"}` };
    }
    if (kind === "model" || kind === "tool") {
      const what = kind === "model" ? "model call" : `tool call${own?.toolName ? ` (${own.toolName})` : ""}`;
      return idleMs >= t.abortMs
        ? { ...common, type: "session.stalled", reason: `${what} silent past the abort threshold` }
        : { ...common, type: "session.long_running", reason: `${what} in progress, no output yet` };
    }
    return { ...common, type: "session.stalled", reason: "active run without progress" };
  }

  if (q.queued === 0) return undefined;
  // a drain timer that is armed and not yet due is a quiet window, not a stuck session
  if (q.dueAt !== undefined && q.dueAt > now) return undefined;
  const since = q.dueAt ?? q.processingSince;
  const idleMs = now - since;
  if (idleMs < t.warnMs) return undefined;
  return {
    ...base,
    type: "session.stuck",
    activity: "queued",
    owned: false,
    idleMs,
    processingMs: now - q.processingSince,
    reason: `${q.queued} queued input(s) with nothing active and ${q.dueAt === undefined ? "no" : "an overdue"} drain timer`,
  };
}
