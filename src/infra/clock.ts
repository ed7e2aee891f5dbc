/** Time and ids are injected so that timeouts and diagnostics are tested without sleeping. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The longest delay Node's setTimeout takes (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A timer further away than MAX_TIMER_MS. Node fires a timer whose delay does not fit in 32 bits after 1 ms (with a
 * TimeoutOverflowWarning), so a far deadline — a yearly cron job's next run — would fire at once, and a scheduler
 * that re-arms for the same deadline would spin. This one waits in steps of at most MAX_TIMER_MS instead.
 */
class LongTimer {
  current: NodeJS.Timeout | undefined;
}

function unrefTimeout(fn: () => void, ms: number): NodeJS.Timeout {
  const t = setTimeout(fn, ms);
  t.unref?.();
  return t;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    if (!(ms > MAX_TIMER_MS)) return unrefTimeout(fn, ms);
    const timer = new LongTimer();
    const due = Date.now() + ms;
    const step = () => {
      const left = due - Date.now();
      if (left <= 0) {
        timer.current = undefined;
        fn();
      } else timer.current = unrefTimeout(step, Math.min(left, MAX_TIMER_MS));
    };
    timer.current = unrefTimeout(step, MAX_TIMER_MS);
    return timer;
  },
  clearTimeout: (h) => clearTimeout(h instanceof LongTimer ? h.current : (h as NodeJS.Timeout)),
};
