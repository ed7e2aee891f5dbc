import type { Clock } from "./clock.js";

/**
 * One run's view of the stream cadence: what its provider, its delta coalescer and its chat projection pace on.
 *
 * `slot` is the beat interval the clock is in for this run. "Nothing went out in this slot yet" is the pacing rule
 * of everything on the beat: such work goes out at once, anything more waits for the run's next beat. Being on the
 * clock's grid, it stays right while the timer is stopped and when a beat fires late.
 */
export interface Beat {
  readonly periodMs: number;
  readonly slot: number;
  /** `fn` runs at this run's next beat */
  next(fn: () => void): void;
  /** `fn` runs at this run's next beat, after every `next` callback of that beat */
  after(fn: () => void): void;
  /** `fn` no longer runs at the next beat (it went out some other way) */
  cancel(fn: () => void): void;
}

/**
 * The shared beat for work that may wait a little: the deltas a provider and the coalescer hold
 * (providers/http-stream.ts, agent/run/delta-coalescer.ts) and the chat projection's paced deltas
 * (gateway/chat-projection.ts).
 *
 * Why a shared beat instead of a timer per run: at a thousand concurrent streams, per-run timers fire at a thousand
 * different moments, so every run's frames leave in a system call of their own, and a run's chat delta leaves in a
 * different write from the assistant delta it came with. On a beat, a run's held deltas go out in the same macrotask
 * as its chat delta and as the other runs of its phase: a connection's frames of that beat leave in one write
 * (gateway/connection.ts corks until the tick ends), the event store writes them in one transaction, and a client
 * wakes once per beat.
 *
 * Why phases: all runs on one beat made one burst of work per period; at a thousand streams the burst took most of
 * the period, and the runs at its end waited for the runs before them. With `phases` > 1 the runs are spread over
 * that many beats, evenly offset within the period (a run's phase comes from its run id, so every part of the
 * gateway that paces a run agrees on it): each burst is a share of the runs, and every run still gets one beat per
 * period.
 *
 * Beats of a phase fall on the clock's grid (multiples of `periodMs`, offset by the phase), so the wait for a run's
 * next beat is in (0, periodMs]; the one timer runs only while someone waits. A callback asked for twice before a
 * beat runs once; one asked for during its beat runs at the next one. `after` callbacks run once every `next`
 * callback of the beat has: the chat projection paces what the coalescer's beat just sent, so it goes last.
 */
export class Cadence {
  /** per phase: what its next beat runs first, and last */
  private readonly waiting: Array<Set<() => void>>;
  private readonly trailing: Array<Set<() => void>>;
  private readonly lanes: Beat[];
  /** the time between two beats of consecutive phases */
  private readonly tickMs: number;
  private timer: unknown;
  /** the tick (time / tickMs) the armed timer is for, and the last tick a beat ran */
  private armedTick = Number.NEGATIVE_INFINITY;
  private firedTick = Number.NEGATIVE_INFINITY;
  /** per phase, the latest slot one of its beats has opened */
  private readonly openedSlot: number[];

  constructor(
    private readonly clock: Clock,
    readonly periodMs: number,
    readonly phases = 1,
  ) {
    if (!(periodMs > 0)) throw new Error(`a cadence needs a period above 0 ms, not ${periodMs}`);
    if (!Number.isInteger(phases) || phases < 1) throw new Error(`a cadence needs 1 or more phases, not ${phases}`);
    this.tickMs = periodMs / phases;
    this.waiting = Array.from({ length: phases }, () => new Set());
    this.trailing = Array.from({ length: phases }, () => new Set());
    this.openedSlot = Array.from({ length: phases }, () => Number.NEGATIVE_INFINITY);
    this.lanes = Array.from({ length: phases }, (_, phase) => this.makeLane(phase));
  }

  /** The view of the phase `key` (a run id) falls in; the same key always gets the same phase. */
  lane(key: string): Beat {
    return this.lanes[this.phases === 1 ? 0 : phaseOf(key, this.phases)];
  }

  private makeLane(phase: number): Beat {
    const offset = phase * this.tickMs;
    const { clock, periodMs, openedSlot } = this;
    return {
      periodMs: this.periodMs,
      get slot() {
        // a beat opens its slot even when the timer ran a little before the clock reached it (timers and
        // Date.now() round differently): otherwise work handed on by that beat would count as the previous slot's,
        // and wait a whole period more
        return Math.max(Math.floor((clock.now() - offset) / periodMs), openedSlot[phase]);
      },
      next: (fn) => this.add(this.waiting[phase], fn, phase),
      after: (fn) => this.add(this.trailing[phase], fn, phase),
      cancel: (fn) => {
        this.waiting[phase].delete(fn);
        this.trailing[phase].delete(fn);
      },
    };
  }

  private add(set: Set<() => void>, fn: () => void, phase: number): void {
    set.add(fn);
    // the timer may be set for another phase's later beat: this phase's comes first
    const tick = this.nextTickOf(phase);
    if (this.timer !== undefined && tick >= this.armedTick) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.armAt(tick);
  }

  /** The first tick after now (and after the last one run: a timer may run a little early). */
  private nextTick(): number {
    return Math.max(Math.floor(this.clock.now() / this.tickMs), this.firedTick) + 1;
  }

  /** The next tick of `phase` after now. */
  private nextTickOf(phase: number): number {
    const tick = this.nextTick();
    return tick + ((phase - this.phaseOfTick(tick) + this.phases) % this.phases);
  }

  /** The timer, for the next tick whose phase has something waiting (a wake-up with nothing to do costs too). */
  private arm(): void {
    let tick = this.nextTick();
    for (let k = 0; k < this.phases; k++, tick++) if (this.hasWaiting(this.phaseOfTick(tick))) break;
    this.armAt(tick);
  }

  private armAt(tick: number): void {
    this.armedTick = tick;
    this.timer = this.clock.setTimeout(this.beat, Math.max(0, tick * this.tickMs - this.clock.now()));
  }

  private phaseOfTick(tick: number): number {
    return ((tick % this.phases) + this.phases) % this.phases;
  }

  private hasWaiting(phase: number): boolean {
    return this.waiting[phase].size > 0 || this.trailing[phase].size > 0;
  }

  private readonly beat = (): void => {
    this.timer = undefined;
    // A timer that ran late (a busy loop) runs every tick that has passed since, each phase once, at its latest
    // tick: left to one tick per timer, a phase would wait a loop turn per phase before it. One that ran a little
    // early runs its own tick (see `slot`).
    const lastTick = Math.max(this.armedTick, Math.floor(this.clock.now() / this.tickMs));
    const firstTick = Math.max(this.armedTick, lastTick - this.phases + 1);
    this.firedTick = lastTick;
    let failure: { err: unknown } | undefined;
    for (let tick = firstTick; tick <= lastTick; tick++) {
      const phase = this.phaseOfTick(tick);
      this.openedSlot[phase] = Math.max(this.openedSlot[phase], (tick - phase) / this.phases);
      const first = this.waiting[phase];
      const last = this.trailing[phase];
      if (first.size === 0 && last.size === 0) continue;
      this.waiting[phase] = new Set();
      this.trailing[phase] = new Set();
      for (const group of [first, last]) {
        for (const fn of group) {
          // one run's failing flush must not leave every other run's deltas held
          try {
            fn();
          } catch (err) {
            failure ??= { err };
          }
        }
      }
    }
    // what the callbacks asked for may have set the timer for their own phase's next beat; another phase's may be
    // sooner
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.anyWaiting()) this.arm();
    // surfaced as the timer callback's own error would have been, after the others ran
    if (failure) throw failure.err;
  };

  private anyWaiting(): boolean {
    for (let p = 0; p < this.phases; p++) if (this.hasWaiting(p)) return true;
    return false;
  }
}

/** FNV-1a over the key's UTF-16 units: cheap, and spreads run ids (random) evenly. */
function phaseOf(key: string, phases: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % phases;
}
