import type { Clock } from "./clock.js";

/**
 * One shared beat for work that may wait a little: the deltas the coalescer holds (agent/run/delta-coalescer.ts) and
 * the chat projection's paced deltas (gateway/chat-projection.ts).
 *
 * Why one beat instead of a timer per run: at a thousand concurrent streams, per-run timers fire at a thousand
 * different moments, so every run's frames leave in a system call of their own, and a run's chat delta leaves in a
 * different write from the assistant delta it came with. On one beat, every held delta of every run goes out in the
 * same macrotask: a connection's frames of that beat leave in one write (gateway/connection.ts corks until the tick
 * ends), the event store writes them in one transaction, and the clients wake once per beat instead of once per
 * run.
 *
 * Beats fall on multiples of `periodMs` of the clock's time, so the wait for the next one is in (0, periodMs]; the
 * timer runs only while someone waits. A callback asked for twice before a beat runs once; one asked for during a
 * beat runs at the next beat. `after` callbacks run once every `next` callback of the beat has: the chat projection
 * paces what the coalescer's beat just sent, so it goes last.
 */
export class Cadence {
  private waiting = new Set<() => void>();
  private trailing = new Set<() => void>();
  private timer: unknown;
  /** the slot the armed timer's beat opens, and the latest slot a beat has opened */
  private armedSlot = Number.NEGATIVE_INFINITY;
  private openedSlot = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    readonly periodMs: number,
  ) {
    if (!(periodMs > 0)) throw new Error(`a cadence needs a period above 0 ms, not ${periodMs}`);
  }

  /**
   * The beat interval the clock is in now (beats fall at its multiples of `periodMs`). "Nothing went out in this
   * slot yet" is the pacing rule of everything on the beat: such work goes out at once, anything more waits for the
   * next beat. Being on the clock's grid, it stays right while the timer is stopped and when a beat fires late.
   */
  get slot(): number {
    // a beat opens its slot even when the timer ran a little before the clock reached it (timers and Date.now()
    // round differently): otherwise work handed on by that beat would count as the previous slot's, and wait a
    // whole period more
    return Math.max(Math.floor(this.clock.now() / this.periodMs), this.openedSlot);
  }

  /** `fn` runs at the next beat. */
  next(fn: () => void): void {
    this.waiting.add(fn);
    if (this.timer === undefined) this.arm();
  }

  /** `fn` runs at the next beat, after every `next` callback of that beat. */
  after(fn: () => void): void {
    this.trailing.add(fn);
    if (this.timer === undefined) this.arm();
  }

  /** `fn` no longer runs at the next beat (it went out some other way). */
  cancel(fn: () => void): void {
    this.waiting.delete(fn);
    this.trailing.delete(fn);
  }

  /** Stop the timer; whatever waits is dropped (the owner is shutting down). */
  dispose(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.waiting.clear();
    this.trailing.clear();
  }

  private arm(): void {
    const now = this.clock.now();
    this.armedSlot = Math.floor(now / this.periodMs) + 1;
    this.timer = this.clock.setTimeout(this.beat, this.periodMs - (now % this.periodMs));
  }

  private readonly beat = (): void => {
    this.timer = undefined;
    this.openedSlot = Math.max(this.openedSlot, this.armedSlot);
    const due = this.waiting;
    const last = this.trailing;
    this.waiting = new Set();
    this.trailing = new Set();
    let failure: { err: unknown } | undefined;
    for (const group of [due, last]) {
      for (const fn of group) {
        // one run's failing flush must not leave every other run's deltas held
        try {
          fn();
        } catch (err) {
          failure ??= { err };
        }
      }
    }
    if ((this.waiting.size > 0 || this.trailing.size > 0) && this.timer === undefined) this.arm();
    // surfaced as the timer callback's own error would have been, after the others ran
    if (failure) throw failure.err;
  };
}
