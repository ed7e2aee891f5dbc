import { describe, expect, it } from "vitest";
import { ManualClock } from "../testing/manual-clock.js";
import { Cadence } from "./cadence.js";
import type { Clock } from "./clock.js";

/** A clock whose one timer the test runs by hand (`fire`), at whatever time `now` says. */
function handRunClock() {
  const state = { now: 0, due: undefined as (() => void) | undefined };
  const clock: Clock = {
    now: () => state.now,
    setTimeout: (fn) => {
      state.due = fn;
      return 1;
    },
    clearTimeout: () => {
      state.due = undefined;
    },
  };
  const fire = () => {
    const fn = state.due;
    state.due = undefined;
    fn?.();
  };
  return { clock, state, fire };
}

describe("Cadence: one shared beat for held work", () => {
  it("runs what waits at the next multiple of the period, whenever it was asked for", () => {
    const clock = new ManualClock(1_000_007);
    const beat = new Cadence(clock, 40).lane("run");
    const ran: number[] = [];
    beat.next(() => ran.push(clock.now()));
    clock.advance(20);
    beat.next(() => ran.push(clock.now()));
    clock.advance(13); // 1_000_040 is the next multiple of 40
    expect(ran).toEqual([1_000_040, 1_000_040]);
  });

  it("a callback asked for twice before a beat runs once, and a cancelled one not at all", () => {
    const clock = new ManualClock(0);
    const beat = new Cadence(clock, 10).lane("run");
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
    const beat = new Cadence(clock, 10).lane("run");
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
    const beat = new Cadence(clock, 10).lane("run");
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
    const beat = new Cadence(clock, 10).lane("run");
    const ran: string[] = [];
    beat.after(() => ran.push("paced chat"));
    beat.next(() => ran.push("held delta"));
    clock.advance(10);
    expect(ran).toEqual(["held delta", "paced chat"]);
  });

  it("regression: a beat whose timer runs a little early still opens its slot, so what it hands on is not held a period more", () => {
    // Node timers and Date.now() round differently, so the beat due at 40 may run while Date.now() still says 39
    const { clock, state, fire } = handRunClock();
    const beat = new Cadence(clock, 40).lane("run");
    beat.next(() => {});
    state.now = 39;
    expect(beat.slot).toBe(0);
    fire();
    expect(beat.slot).toBe(1);
  });

  it("spreads runs over phases: each run gets one beat per period, the phases' beats evenly offset", () => {
    const clock = new ManualClock(0);
    const cadence = new Cadence(clock, 40, 4);
    const ranAt = new Map<string, number[]>();
    const runs = Array.from({ length: 40 }, (_, i) => `run-${i}`);
    for (const run of runs) {
      const lane = cadence.lane(run);
      const again = () => {
        ranAt.get(run)?.push(clock.now());
        if ((ranAt.get(run)?.length ?? 0) < 3) lane.next(again);
      };
      ranAt.set(run, []);
      lane.next(again);
    }
    for (let ms = 0; ms < 200; ms++) clock.advance(1);
    const firstBeats = new Set<number>();
    for (const run of runs) {
      const times = ranAt.get(run) ?? [];
      expect(times).toHaveLength(3);
      // one beat per period for each run
      expect([times[1] - times[0], times[2] - times[1]]).toEqual([40, 40]);
      firstBeats.add(times[0]);
      // the same run id always falls in the same phase
      expect(cadence.lane(run)).toBe(cadence.lane(run));
    }
    // the 40 runs were spread over the 4 phases, 10 ms apart
    expect([...firstBeats].sort((a, b) => a - b)).toEqual([10, 20, 30, 40]);
  });

  it("a beat that runs late runs every phase whose beat has passed, each once, instead of one phase per timer", () => {
    const { clock, state, fire } = handRunClock();
    const cadence = new Cadence(clock, 40, 4);
    const ran: string[] = [];
    const keys = Array.from({ length: 16 }, (_, i) => `run-${i}`);
    for (const key of keys) cadence.lane(key).next(() => ran.push(key));
    // the loop was busy: the timer due at 10 ms runs at 95 ms, past every phase's beat
    state.now = 95;
    fire();
    expect(ran.sort()).toEqual([...keys].sort());
    expect(state.due).toBeUndefined(); // nothing waits any more: no timer
  });

  it("refuses a period of 0", () => {
    expect(() => new Cadence(new ManualClock(0), 0)).toThrow("a cadence needs a period above 0 ms, not 0");
    expect(() => new Cadence(new ManualClock(0), 40, 0)).toThrow("a cadence needs 1 or more phases, not 0");
  });
});
