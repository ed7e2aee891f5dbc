import type { StatusTimer } from "./status-line.js";

/** A StatusTimer for tests: time moves only when `advance` is called, and due ticks run then. */
export function manualTimer(start = 1_000) {
  let now = start;
  const timers = new Map<number, { ms: number; next: number; fn: () => void }>();
  let nextId = 1;
  const timer: StatusTimer = {
    now: () => now,
    every(ms, fn) {
      const id = nextId++;
      timers.set(id, { ms, next: now + ms, fn });
      return () => timers.delete(id);
    },
  };
  const advance = (ms: number) => {
    const until = now + ms;
    for (;;) {
      const due = [...timers.values()].filter((t) => t.next <= until).sort((a, b) => a.next - b.next)[0];
      if (!due) break;
      now = due.next;
      due.next += due.ms;
      due.fn();
    }
    now = until;
  };
  return { timer, advance, active: () => timers.size };
}
