import type { QueueContext, SessionState } from "./types.js";

/**
 * Sets the session's drain timer: the next turn starts `debounceMs` after the last enqueue (at once after an
 * interrupt or a restart). A session with nothing left to run is forgotten, so idle sessions cost no memory.
 */
export function scheduleNext(ctx: QueueContext, s: SessionState, due: (s: SessionState) => void): void {
  if (s.active) return;
  const { clock } = ctx.deps;
  if (s.timer !== undefined) clock.clearTimeout(s.timer);
  s.timer = undefined;
  s.dueAt = undefined;
  if (s.pending.length === 0 && s.overflow.count === 0) {
    ctx.sessions.delete(s.key);
    ctx.cluster?.sessionIdle(s.key);
    return;
  }
  const quietUntil = s.lastEnqueueAt + ctx.deps.config().debounceMs;
  const wait = s.immediate ? 0 : Math.max(0, quietUntil - clock.now());
  s.dueAt = clock.now() + wait;
  s.timer = clock.setTimeout(() => {
    s.timer = undefined;
    s.dueAt = undefined;
    try {
      due(s);
    } catch (err) {
      // a store that cannot write (disk full) must not kill the process from a timer; what did not start stays
      // queued in the store and runs after the next start
      process.emitWarning(`session ${s.key}: the next turn could not start: ${(err as Error)?.message ?? String(err)}`);
    }
  }, wait);
}
