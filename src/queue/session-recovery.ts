import type { RecoveryOutcome } from "../protocol/diagnostics.js";
import { zeroUsage } from "./finals.js";
import { recordOutcome, requeueLateSteers } from "./turn.js";
import type { ActiveTurn, QueueContext, SessionState } from "./types.js";

/**
 * Stuck-session recovery (SPEC 13), the queue's side. Both operations act only while the session is still in the
 * processing generation the diagnostics classified, so a session that moved on meanwhile is left alone; and both
 * keep every queued input: what waited behind the stuck state runs next (steered messages not taken yet become
 * followups, first in line), nothing is dropped.
 */

/**
 * Stale bookkeeping: a session marked busy whose run already ended, or queued inputs with nothing active and no
 * drain timer that will fire. Releases the session and restarts its queue at once.
 */
export function releaseStaleSession(ctx: QueueContext, sessionKey: string, generation: number): RecoveryOutcome {
  const s = ctx.sessions.get(sessionKey);
  if (!s) return "nothing_to_do";
  if (s.generation !== generation) return "superseded";
  const turn = s.active;
  if (turn) {
    // a live host is a run, not bookkeeping: stalled runs are aborted (abortStalledRun), never released here
    if (ctx.live.get(turn.host.runId) === turn.host) return "nothing_to_do";
    releaseTurn(ctx, s, turn);
    return "released";
  }
  if (s.pending.length === 0 && s.overflow.count === 0) {
    ctx.schedule(s);
    return "nothing_to_do";
  }
  // the drain timer was lost or is long overdue: start the next turn without another quiet window
  s.immediate = true;
  ctx.schedule(s);
  return "released";
}

/**
 * A stalled run: aborted through its controller, then given `drainMs` to end (its own cleanup records it and
 * starts the next turn). A run that ignores its abort is ended as aborted here and its session released around it,
 * so the inputs queued behind it still run.
 */
export async function abortStalledRun(
  ctx: QueueContext,
  opts: { sessionKey: string; runId: string; generation: number; reason: string; drainMs: number },
): Promise<RecoveryOutcome> {
  const s = ctx.sessions.get(opts.sessionKey);
  const turn = s?.active;
  if (!s || !turn || turn.host.runId !== opts.runId) return "nothing_to_do";
  if (s.generation !== opts.generation) return "superseded";
  const { host } = turn;
  host.controller?.abort(new Error(opts.reason));
  const { clock } = ctx.deps;
  let timer: unknown;
  const drained = await Promise.race([
    host.done.promise.then(() => true),
    new Promise<false>((resolve) => {
      timer = clock.setTimeout(() => resolve(false), opts.drainMs);
    }),
  ]);
  clock.clearTimeout(timer);
  if (drained) return "aborted";
  if (s.active !== turn || s.generation !== opts.generation) return "superseded";
  const now = clock.now();
  const error = `${opts.reason}; it did not end within ${opts.drainMs} ms of its abort`;
  // its own terminal event will never come: clients following the run get this one
  ctx.deps.bus.emit(host.runId, host.sessionKey, "lifecycle", {
    phase: "error",
    endedAt: now,
    status: "aborted",
    stopReason: "aborted",
    error,
    kind: "aborted",
  });
  recordOutcome(ctx, turn, {
    runId: host.runId,
    sessionKey: host.sessionKey,
    status: "aborted",
    stopReason: "aborted",
    payloads: [],
    usage: zeroUsage(),
    startedAt: now,
    endedAt: now,
    durationMs: 0,
    laneWaitMs: 0,
    steps: 0,
    model: "",
    error: { message: error, kind: "aborted" },
  });
  releaseTurn(ctx, s, turn);
  return "released_after_abort";
}

/** Drops the turn from its session (its late end, if any, is ignored) and starts what waits behind it. */
function releaseTurn(ctx: QueueContext, s: SessionState, turn: ActiveTurn): void {
  turn.released = true;
  turn.steerable = false;
  turn.releaseLanes?.();
  if (s.active === turn) s.active = undefined;
  requeueLateSteers(ctx, s, turn);
  s.generation = ++ctx.generations;
  s.processingSince = ctx.deps.clock.now();
  s.immediate = true;
  ctx.schedule(s);
}
