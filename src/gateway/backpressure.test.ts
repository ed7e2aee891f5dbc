import { describe, expect, it } from "vitest";
import { BackpressureMonitor } from "./backpressure.js";

const MB = 1024 * 1024;

function monitor(graceMs = 5000) {
  const clock = { t: 1000 };
  const m = new BackpressureMonitor({ limitBytes: 8 * MB, graceMs, now: () => clock.t });
  return { m, clock };
}

describe("the slow-consumer rule", () => {
  it("keeps a reader whose one big reply is still over the limit at the next frame", () => {
    const { m, clock } = monitor();
    expect(m.beforeSend(0).drop).toBe(false);
    // a 20 MB reply went out; an event follows 1 ms later
    clock.t += 1;
    expect(m.beforeSend(20 * MB)).toEqual({ drop: false, watchFlush: true });
    clock.t += 4000;
    expect(m.beforeSend(9 * MB).drop).toBe(false);
  });

  it("drops a consumer whose backlog stays over the limit for the grace", () => {
    const { m, clock } = monitor();
    m.beforeSend(9 * MB);
    clock.t += 4999;
    expect(m.beforeSend(10 * MB).drop).toBe(false);
    clock.t += 1;
    expect(m.beforeSend(10 * MB)).toEqual({
      drop: true,
      reason: `backlog over ${8 * MB} bytes, not drained below ${4 * MB} for 5000 ms`,
      unreadBytes: 10 * MB,
      overMs: 5000,
    });
  });

  it("starts the grace again when the backlog drained in between, even with no frame sent meanwhile", () => {
    const { m, clock } = monitor();
    m.beforeSend(9 * MB);
    clock.t += 3000;
    // the frame sent while over the limit reached the kernel with little left behind it
    m.afterFlush(2 * MB);
    clock.t += 3000;
    expect(m.beforeSend(9 * MB).drop).toBe(false);
    clock.t += 4999;
    expect(m.beforeSend(9 * MB).drop).toBe(false);
  });

  it("a flush that still leaves the backlog over the limit does not reset the grace", () => {
    const { m, clock } = monitor();
    m.beforeSend(9 * MB);
    clock.t += 3000;
    m.afterFlush(9 * MB);
    clock.t += 2000;
    expect(m.beforeSend(9 * MB).drop).toBe(true);
  });

  it("drops at once a backlog past four times the limit, so memory stays bounded during the grace", () => {
    const { m } = monitor();
    expect(m.beforeSend(32 * MB).drop).toBe(false);
    expect(m.beforeSend(32 * MB + 1)).toMatchObject({ drop: true, reason: `backlog over ${32 * MB} bytes`, overMs: 0 });
  });

  it("with a grace of 0, any backlog over the limit drops the consumer at the next frame", () => {
    const { m } = monitor(0);
    expect(m.beforeSend(8 * MB).drop).toBe(false);
    expect(m.beforeSend(8 * MB + 1).drop).toBe(true);
  });

  it("slow-reader-clock-holds-when-one-sample-dips: a backlog that dips just under the limit for a moment is still judged from when it first went over", () => {
    const { m, clock } = monitor();
    m.beforeSend(9 * MB);
    clock.t += 3000;
    // one frame reached the kernel and the backlog was a little under the limit for that sample
    m.afterFlush(8 * MB - 1);
    clock.t += 2000;
    expect(m.beforeSend(9 * MB)).toMatchObject({ drop: true, overMs: 5000 });
  });

  it("slow-reader-cut-without-further-frames: the grace is checked on the clock, not only when a frame is sent", () => {
    const { m, clock } = monitor();
    expect(m.beforeSend(9 * MB)).toEqual({ drop: false, watchFlush: true });
    expect(m.checkDueInMs()).toBe(5000);
    clock.t += 5000;
    expect(m.check(9 * MB)).toMatchObject({ drop: true, overMs: 5000 });
  });

  it("a backlog drained below the low-water mark (half the limit) is forgiven; the clock starts again", () => {
    const { m, clock } = monitor();
    m.beforeSend(9 * MB);
    clock.t += 4000;
    expect(m.check(4 * MB)).toEqual({ drop: false, watchFlush: false });
    expect(m.checkDueInMs()).toBeUndefined();
    clock.t += 4000;
    expect(m.beforeSend(9 * MB).drop).toBe(false);
  });
});
