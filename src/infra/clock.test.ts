import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_TIMER_MS, systemClock } from "./clock.js";

// vitest's fake timers stand in for Node's here: like Node, they fire a delay above 2^31 - 1 ms after 1 ms.
describe("systemClock", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a deadline a year away does not fire at once (regression: a yearly cron job spun the scheduler's timer)", () => {
    vi.useFakeTimers({ now: 0 });
    const fired = vi.fn();
    const yearMs = 365 * 24 * 3600 * 1000;
    systemClock.setTimeout(fired, yearMs);
    vi.advanceTimersByTime(10);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(yearMs - MAX_TIMER_MS - 10 - 1);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it("a far timer can be cleared, whichever of its steps is waiting", () => {
    vi.useFakeTimers({ now: 0 });
    const fired = vi.fn();
    const handle = systemClock.setTimeout(fired, 3 * MAX_TIMER_MS);
    vi.advanceTimersByTime(MAX_TIMER_MS + 5);
    systemClock.clearTimeout(handle);
    vi.advanceTimersByTime(3 * MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
  });

  it("a near timer fires once, at its time", () => {
    vi.useFakeTimers({ now: 0 });
    const fired = vi.fn();
    systemClock.setTimeout(fired, 1000);
    vi.advanceTimersByTime(999);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });
});
