/**
 * The slow-consumer rule for one connection. A reader that keeps up can still have a large backlog for a moment:
 * one big reply sits in our buffer while the client reads it. So a backlog over `limitBytes` is tolerated for
 * `graceMs`; only a backlog that stays over the limit that long marks a consumer as slow. A backlog over
 * `ceilingBytes` is dropped at once, so memory stays bounded even while the grace runs (a client that stops reading
 * and keeps asking for pages would otherwise pile up replies for the whole grace).
 *
 * The connection samples the backlog before each frame it sends (`beforeSend`) and, while over the limit, again
 * when a frame has been handed to the kernel (`afterFlush`): that second sample is what notices a backlog that
 * drained between two sends, so a reader that caught up is not judged by an old overrun.
 */

/** How many times the limit a backlog may reach before it is dropped without waiting for the grace. */
export const CEILING_FACTOR = 4;

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
  private readonly ceiling: number;
  private readonly graceMs: number;
  private readonly now: () => number;
  /** when the backlog was first seen over the limit; unset while it is within */
  private overSince: number | undefined;

  constructor(opts: BackpressureOptions) {
    this.limit = opts.limitBytes;
    this.ceiling = opts.ceilingBytes ?? opts.limitBytes * CEILING_FACTOR;
    this.graceMs = opts.graceMs;
    this.now = opts.now;
  }

  /** Whether a frame may be written on top of `backlog` unread bytes. */
  beforeSend(backlog: number): SendVerdict {
    if (backlog <= this.limit) {
      this.overSince = undefined;
      return { drop: false, watchFlush: false };
    }
    const now = this.now();
    this.overSince ??= now;
    const overMs = now - this.overSince;
    if (backlog > this.ceiling) {
      return { drop: true, reason: `backlog over ${this.ceiling} bytes`, unreadBytes: backlog, overMs };
    }
    if (overMs >= this.graceMs) {
      return {
        drop: true,
        reason: `backlog over ${this.limit} bytes for ${overMs} ms`,
        unreadBytes: backlog,
        overMs,
      };
    }
    return { drop: false, watchFlush: true };
  }

  /** A frame reached the kernel; `backlog` is what is still unread behind it. */
  afterFlush(backlog: number): void {
    if (backlog <= this.limit) this.overSince = undefined;
  }
}
