import { describe, expect, it } from "vitest";
import { ManualClock } from "../testing/manual-clock.js";
import { Cadence } from "./cadence.js";
import type { Clock } from "./clock.js";

describe("Cadence: one shared beat for held work", () => {
  it("runs what waits at the next multiple of the period, whenever it was asked for", () => {
    const clock = new ManualClock(1_000_007);
    const beat = new Cadence(clock, 40);
    const ran: number[] = [];
    beat.next(() => ran.push(clock.now()));
    clock.advance(20);
    beat.next(() => ran.push(clock.now()));
    clock.advance(13); // 1_000_040 is the next multiple of 40
    expect(ran).toEqual([1_000_040, 1_000_040]);
  });

  it("a callback asked for twice before a beat runs once, and a cancelled one not at all", () => {
    const clock = new ManualClock(0);
    const beat = new Cadence(clock, 10);
    let twice = 0;
    let cancelled = 0;
    const once = () => twice++;
    const dropped = () => cancelled++;
    beat.next(once);
    beat.next(once);
    beat.next(dropped);
    beat.cancel(dropped);
    clock.advance(10);
    expect([twice, cancelled]).toEqual([1, 0]);
  });

  it("work asked for during a beat waits for the next beat, and the timer stops once nothing waits", () => {
    const clock = new ManualClock(0);
    const beat = new Cadence(clock, 10);
    const ran: number[] = [];
    const again = () => {
      ran.push(clock.now());
      if (ran.length < 3) beat.next(again);
    };
    beat.next(again);
    clock.advance(10);
    clock.advance(10);
    clock.advance(10);
    expect(ran).toEqual([10, 20, 30]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("one callback that throws does not keep the others of its beat from running, and its error still surfaces", () => {
    const clock = new ManualClock(0);
    const beat = new Cadence(clock, 10);
    const ran: string[] = [];
    beat.next(() => {
      throw new Error("flush failed");
    });
    beat.next(() => ran.push("second"));
    expect(() => clock.advance(10)).toThrow("flush failed");
    expect(ran).toEqual(["second"]);
  });

  it("an `after` callback runs once every `next` callback of its beat has, even one asked for earlier", () => {
    const clock = new ManualClock(0);
    const beat = new Cadence(clock, 10);
    const ran: string[] = [];
    beat.after(() => ran.push("paced chat"));
    beat.next(() => ran.push("held delta"));
    clock.advance(10);
    expect(ran).toEqual(["held delta", "paced chat"]);
  });

  it("regression: a beat whose timer runs a little early still opens its slot, so what it hands on is not held a period more", () => {
    // a clock whose one timer the test runs by hand, at whatever time it says: Node timers and Date.now() round
    // differently, so the beat due at 40 may run while Date.now() still says 39
    let now = 0;
    let due: (() => void) | undefined;
    const clock: Clock = {
      now: () => now,
      setTimeout: (fn) => {
        due = fn;
        return 1;
      },
      clearTimeout: () => {
        due = undefined;
      },
    };
    const beat = new Cadence(clock, 40);
    beat.next(() => {});
    now = 39;
    expect(beat.slot).toBe(0);
    due?.();
    expect(beat.slot).toBe(1);
  });

  it("refuses a period of 0", () => {
    expect(() => new Cadence(new ManualClock(0), 0)).toThrow("a cadence needs a period above 0 ms, not 0");
  });
});
