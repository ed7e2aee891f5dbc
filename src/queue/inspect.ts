import type { QueueContext, QueueSessionView, SessionState } from "./types.js";

/**
 * The queue's state per session with work, as the stuck-session diagnostics read it. O(sessions with work): the
 * queue forgets idle sessions, so this never walks sessions that are done.
 */
export function inspectSessions(ctx: QueueContext): QueueSessionView[] {
  const out: QueueSessionView[] = [];
  for (const s of ctx.sessions.values()) out.push(viewOf(ctx, s));
  return out;
}

export function inspectSession(ctx: QueueContext, sessionKey: string): QueueSessionView | undefined {
  const s = ctx.sessions.get(sessionKey);
  return s ? viewOf(ctx, s) : undefined;
}

/** Everything waiting that has not started: queued messages, steered ones not taken yet, an overflow notice. */
export function queuedInputs(s: SessionState): number {
  return s.pending.length + (s.active?.steer.length ?? 0) + (s.overflow.count > 0 ? 1 : 0);
}

function viewOf(ctx: QueueContext, s: SessionState): QueueSessionView {
  const view: QueueSessionView = {
    sessionKey: s.key,
    generation: s.generation,
    processingSince: s.processingSince,
    queued: queuedInputs(s),
  };
  if (s.dueAt !== undefined) view.dueAt = s.dueAt;
  if (s.active) {
    const { host } = s.active;
    view.active = {
      runId: host.runId,
      // a host whose LiveRun ended while the session still names it is bookkeeping nothing will clear
      phase: ctx.live.get(host.runId) === host ? host.phase : "ended",
      merged: [...s.active.merged, ...s.active.steer].map((r) => r.runId),
    };
  }
  return view;
}
