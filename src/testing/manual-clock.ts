import type { Clock } from "../infra/clock.js";

/**
 * A clock whose time moves only when the test says so (`advance`), for timeouts tested without sleeping.
 * `onTimer` lets a test hear that something armed a timer (e.g. to advance only once a wait has begun).
 */
export class ManualClock implements Clock {
  private time: number;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 1_700_000_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward and runs every timer that is due, earliest first. */
  advance(ms: number): void {
    this.time += ms;
    for (const [id, t] of [...this.timers].sort((a, b) => a[1].at - b[1].at)) {
      if (t.at <= this.time && this.timers.has(id)) {
        this.timers.delete(id);
        t.fn();
      }
    }
  }

  get pendingTimers(): number {
    return this.timers.size;
  }
}
