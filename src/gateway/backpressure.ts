/**
 * The slow-consumer rule for one connection. A reader that keeps up can still have a large backlog for a moment:
 * one big reply sits in our buffer while the client reads it. So a backlog over `limitBytes` is tolerated for
 * `graceMs`; only a consumer that has not drained its backlog to the low-water mark (half the limit) within the
 * grace since it first went over the limit is slow. A backlog over `ceilingBytes` is dropped at once, so memory
 * stays bounded even while the grace runs (a client that stops reading and keeps asking for pages would otherwise
 * pile up replies for the whole grace).
 *
 * Why a low-water mark and not "under the limit": a reader that takes in a little of a stalled backlog, or whose
 * backlog is sampled just as one frame left, dips under the limit for one sample and rises again; with the clock
 * restarted by every such dip, a stalled reader lived until the ceiling (41 s and ~88 MB each, issue 25). Only a
 * real drain (to half the limit) forgives the overrun.
 *
 * The connection samples the backlog before each frame it sends (`beforeSend`), when a frame sent while over the
 * limit has been handed to the kernel (`afterFlush`: notices a drain between two sends), and on a timer when the
 * grace ends (`check`, after `checkDueInMs`): a reader that stalls after its last frame is cut on time, not at the
 * next frame the gateway happens to send.
 */

/** How many times the limit a backlog may reach before it is dropped without waiting for the grace. */
export const CEILING_FACTOR = 4;
/** The backlog must drain to this fraction of the limit before an overrun is forgotten. */
export const LOW_WATER_FACTOR = 0.5;

export interface BackpressureOptions {
  limitBytes: number;
  /** 0: a backlog over the limit drops the consumer at the next frame */
  graceMs: number;
  ceilingBytes?: number;
  now: () => number;
}

export type SendVerdict =
  | { drop: false /** sample the backlog again once this frame is flushed */; watchFlush: boolean }
  | { drop: true; reason: string; unreadBytes: number; overMs: number };

export class BackpressureMonitor {
  private readonly limit: number;
  private readonly lowWater: number;
  private readonly ceiling: number;
  private readonly graceMs: number;
  private readonly now: () => number;
  /** when the backlog went over the limit without draining to the low-water mark since; unset while it has */
  private overSince: number | undefined;

  constructor(opts: BackpressureOptions) {
    this.limit = opts.limitBytes;
    this.lowWater = Math.floor(opts.limitBytes * LOW_WATER_FACTOR);
    this.ceiling = opts.ceilingBytes ?? opts.limitBytes * CEILING_FACTOR;
    this.graceMs = opts.graceMs;
    this.now = opts.now;
  }

  /** Whether a frame may be written on top of `backlog` unread bytes. */
  beforeSend(backlog: number): SendVerdict {
    if (backlog > this.limit) this.overSince ??= this.now();
    return this.check(backlog);
  }

  /** A frame reached the kernel; `backlog` is what is still unread behind it. */
  afterFlush(backlog: number): void {
    if (backlog <= this.lowWater) this.overSince = undefined;
  }

  /** The verdict on `backlog` now, without a frame: what the grace timer asks. */
  check(backlog: number): SendVerdict {
    if (backlog <= this.lowWater) this.overSince = undefined;
    if (this.overSince === undefined) return { drop: false, watchFlush: false };
    const overMs = this.now() - this.overSince;
    if (backlog > this.ceiling) {
      return { drop: true, reason: `backlog over ${this.ceiling} bytes`, unreadBytes: backlog, overMs };
    }
    if (overMs >= this.graceMs) {
      return {
        drop: true,
        reason: `backlog over ${this.limit} bytes, not drained below ${this.lowWater} for ${overMs} ms`,
        unreadBytes: backlog,
        overMs,
      };
    }
    return { drop: false, watchFlush: true };
  }

  /** ms until the grace of the current overrun ends; undefined while there is none */
  checkDueInMs(): number | undefined {
    if (this.overSince === undefined) return undefined;
    return Math.max(0, this.overSince + this.graceMs - this.now());
  }
}
