import { afterEach, describe, expect, it, vi } from "vitest";
import {
  defaultMaxConcurrent,
  LaneAbortedError,
  LaneClearedError,
  LaneScheduler,
  type LaneSlot,
  type LaneWaitInfo,
  laneConcurrencyFrom,
  runInSessionAndGlobalLanes,
  sessionLaneName,
} from "./lanes.js";

interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise continuation run; a macrotask hop, not a sleep. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Tracks a promise's outcome so a test can assert it has not settled yet. */
function track<T>(p: Promise<T>): { state: "pending" | "fulfilled" | "rejected"; value?: T; error?: unknown } {
  const t: { state: "pending" | "fulfilled" | "rejected"; value?: T; error?: unknown } = { state: "pending" };
  p.then(
    (value) => {
      t.state = "fulfilled";
      t.value = value;
    },
    (error) => {
      t.state = "rejected";
      t.error = error;
    },
  );
  return t;
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("LaneScheduler ordering and limits", () => {
  it("starts queued work in the order it arrived, one at a time by default", async () => {
    const lanes = new LaneScheduler();
    const started: number[] = [];
    const gates = Array.from({ length: 5 }, () => deferred());
    const runs = gates.map((gate, i) =>
      lanes.run("main", async () => {
        started.push(i);
        await gate.promise;
      }),
    );

    await settle();
    expect(started).toEqual([0]);
    expect(lanes.snapshot("main")).toMatchObject({ active: 1, queued: 4 });

    for (const gate of gates) {
      gate.resolve();
      await settle();
    }
    await Promise.all(runs);
    expect(started).toEqual([0, 1, 2, 3, 4]);
  });

  it("never runs more than 3 tasks at once in a lane limited to 3", async () => {
    const lanes = new LaneScheduler({ concurrency: (lane) => (lane === "pool" ? 3 : 1) });
    let running = 0;
    let maxRunning = 0;
    const gates = Array.from({ length: 10 }, () => deferred());
    const runs = gates.map((gate) =>
      lanes.run("pool", async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await gate.promise;
        running--;
      }),
    );

    await settle();
    expect(running).toBe(3);
    expect(lanes.snapshot("pool")).toEqual({ active: 3, queued: 7, concurrency: 3 });

    for (const gate of gates) {
      gate.resolve();
      await settle();
      expect(running).toBeLessThanOrEqual(3);
    }
    await Promise.all(runs);
    expect(maxRunning).toBe(3);
  });

  it("keeps a session to one turn at a time even when the global lane allows many", async () => {
    const lanes = new LaneScheduler({ concurrency: laneConcurrencyFrom({ main: 8, "session:a": 5 }) });
    const first = deferred();
    let secondStarted = false;
    const a1 = lanes.run(sessionLaneName("a"), () => first.promise);
    const a2 = lanes.run(sessionLaneName("a"), async () => {
      secondStarted = true;
    });

    await settle();
    expect(secondStarted).toBe(false);
    first.resolve();
    await Promise.all([a1, a2]);
    expect(secondStarted).toBe(true);

    const mainGates = Array.from({ length: 8 }, () => deferred());
    const mainRuns = mainGates.map((g) => lanes.run("main", () => g.promise));
    await settle();
    expect(lanes.snapshot("main")).toMatchObject({ active: 8, queued: 0 });
    for (const g of mainGates) g.resolve();
    await Promise.all(mainRuns);
  });

  it("runs lanes nobody configured one at a time", async () => {
    const lanes = new LaneScheduler({ concurrency: laneConcurrencyFrom({ main: 8 }) });
    const gate = deferred();
    const first = lanes.run("cron", () => gate.promise);
    const second = track(lanes.run("cron", async () => "second"));
    await settle();
    expect(lanes.snapshot("cron")).toMatchObject({ active: 1, queued: 1, concurrency: 1 });
    expect(second.state).toBe("pending");
    gate.resolve();
    await first;
    await settle();
    expect(second).toMatchObject({ state: "fulfilled", value: "second" });
  });

  it("starts foreground before normal before background, FIFO within each, without preempting running work", async () => {
    const lanes = new LaneScheduler();
    const holder = await lanes.acquire("main");
    const order: string[] = [];
    const enqueue = (name: string, priority: "foreground" | "normal" | "background") =>
      lanes.run(
        "main",
        async () => {
          order.push(name);
        },
        { priority },
      );
    const runs = [
      enqueue("b1", "background"),
      enqueue("n1", "normal"),
      enqueue("f1", "foreground"),
      enqueue("n2", "normal"),
      enqueue("b2", "background"),
      enqueue("f2", "foreground"),
    ];

    await settle();
    // The holder keeps its slot even though foreground work is waiting.
    expect(order).toEqual([]);
    expect(lanes.snapshot("main")).toMatchObject({ active: 1, queued: 6 });

    holder.release();
    await Promise.all(runs);
    expect(order).toEqual(["f1", "f2", "n1", "n2", "b1", "b2"]);
  });

  it("rejects an unknown priority with an error naming the allowed ones", async () => {
    const lanes = new LaneScheduler();
    // @ts-expect-error: callers from untyped config can pass anything
    await expect(lanes.acquire("main", { priority: "urgent" })).rejects.toThrow(/foreground, normal, background/);
    expect(lanes.laneCount()).toBe(0);
  });
});

describe("LaneScheduler failures, aborts and clearing", () => {
  it("frees the slot when a task throws and gives the error to that caller only", async () => {
    const lanes = new LaneScheduler();
    const boom = new Error("boom");
    const failing = lanes.run("main", async () => {
      throw boom;
    });
    const next = lanes.run("main", async () => "ok");

    await expect(failing).rejects.toBe(boom);
    await expect(next).resolves.toBe("ok");
    expect(lanes.laneCount()).toBe(0);
  });

  it("frees the slot when a task throws synchronously", async () => {
    const lanes = new LaneScheduler();
    const failing = lanes.run("main", () => {
      throw new Error("sync boom");
    });
    await expect(failing).rejects.toThrow("sync boom");
    await expect(lanes.run("main", () => "after")).resolves.toBe("after");
  });

  it("rejects an aborted queued entry at once and keeps the others in order", async () => {
    const lanes = new LaneScheduler();
    const holder = await lanes.acquire("main");
    const order: string[] = [];
    const controller = new AbortController();
    const a = lanes.run("main", async () => {
      order.push("a");
    });
    const b = track(
      lanes.run(
        "main",
        async () => {
          order.push("b");
        },
        { signal: controller.signal },
      ),
    );
    const c = lanes.run("main", async () => {
      order.push("c");
    });

    controller.abort("user cancelled");
    await settle();
    // Rejected while the lane is still busy: the caller does not wait for its turn to learn it was cancelled.
    expect(b.state).toBe("rejected");
    expect(b.error).toBeInstanceOf(LaneAbortedError);
    expect((b.error as LaneAbortedError).reason).toBe("user cancelled");
    expect((b.error as LaneAbortedError).message).toContain("user cancelled");
    expect(lanes.snapshot("main")).toMatchObject({ active: 1, queued: 2 });

    holder.release();
    await Promise.all([a, c]);
    expect(order).toEqual(["a", "c"]);
  });

  it("rejects an already-aborted signal without queueing or running, even when a slot is free", async () => {
    const lanes = new LaneScheduler();
    const task = vi.fn(async () => "ran");
    const reason = new Error("too late");
    const err = await lanes.run("main", task, { signal: AbortSignal.abort(reason) }).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(LaneAbortedError);
    expect((err as LaneAbortedError).reason).toBe(reason);
    expect(task).not.toHaveBeenCalled();
    expect(lanes.laneCount()).toBe(0);
  });

  it("leaves a started task alone when its signal aborts afterwards", async () => {
    const lanes = new LaneScheduler();
    const controller = new AbortController();
    const gate = deferred();
    const run = lanes.run(
      "main",
      async () => {
        await gate.promise;
        return "finished";
      },
      { signal: controller.signal },
    );
    await settle();
    controller.abort();
    gate.resolve();
    await expect(run).resolves.toBe("finished");
  });

  it("clear rejects only queued entries and lets running work finish", async () => {
    const lanes = new LaneScheduler();
    const gate = deferred();
    const running = lanes.run("main", async () => {
      await gate.promise;
      return "running finished";
    });
    const queued = [1, 2, 3].map((i) => track(lanes.run("main", async () => i)));
    await settle();

    expect(lanes.clear("main", "shutting down")).toBe(3);
    await settle();
    for (const q of queued) {
      expect(q.state).toBe("rejected");
      expect(q.error).toBeInstanceOf(LaneClearedError);
      expect((q.error as LaneClearedError).message).toContain("shutting down");
    }
    expect(lanes.snapshot("main")).toMatchObject({ active: 1, queued: 0 });

    gate.resolve();
    await expect(running).resolves.toBe("running finished");
    await expect(lanes.run("main", async () => "later")).resolves.toBe("later");
    expect(lanes.clear("main")).toBe(0);
  });
});

describe("LaneScheduler wait reporting", () => {
  it("warns once per entry still waiting after warnAfterMs, with queue ahead and behind", async () => {
    vi.useFakeTimers();
    const warnings: LaneWaitInfo[] = [];
    const lanes = new LaneScheduler({ warnAfterMs: 2000, onWaitWarning: (info) => warnings.push(info) });
    const holder = await lanes.acquire("main");
    const waits = ["a", "b", "c"].map((label) => lanes.acquire("main", { label }));

    await vi.advanceTimersByTimeAsync(1999);
    expect(warnings).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(warnings).toEqual([
      { lane: "main", label: "a", priority: "normal", waitedMs: 2000, queuedAhead: 0, queuedBehind: 2, active: 1 },
      { lane: "main", label: "b", priority: "normal", waitedMs: 2000, queuedAhead: 1, queuedBehind: 1, active: 1 },
      { lane: "main", label: "c", priority: "normal", waitedMs: 2000, queuedAhead: 2, queuedBehind: 0, active: 1 },
    ]);

    await vi.advanceTimersByTimeAsync(60_000);
    expect(warnings).toHaveLength(3);

    holder.release();
    const first = await waits[0];
    expect(first.waitedMs).toBe(62_000);
    expect(lanes.clear("main")).toBe(2);
    first.release();
    await Promise.allSettled(waits);
    expect(lanes.laneCount()).toBe(0);
  });

  it("does not warn about an entry that got its slot before warnAfterMs", async () => {
    vi.useFakeTimers();
    const onWaitWarning = vi.fn();
    const lanes = new LaneScheduler({ warnAfterMs: 2000, onWaitWarning });
    const holder = await lanes.acquire("main");
    const waiting = lanes.acquire("main");
    await vi.advanceTimersByTimeAsync(1500);
    holder.release();
    const slot = await waiting;
    expect(slot.waitedMs).toBe(1500);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(onWaitWarning).not.toHaveBeenCalled();
    slot.release();
  });

  it("creates no timers when a slot is free", async () => {
    vi.useFakeTimers();
    const lanes = new LaneScheduler({ onWaitWarning: () => {} });
    const slot = await lanes.acquire("main");
    expect(vi.getTimerCount()).toBe(0);
    expect(slot.waitedMs).toBe(0);
    slot.release();
  });

  it("keeps scheduling when the warning handler throws", async () => {
    vi.useFakeTimers();
    const emitWarning = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const lanes = new LaneScheduler({
      warnAfterMs: 10,
      onWaitWarning: () => {
        throw new Error("logger down");
      },
    });
    const holder = await lanes.acquire("main");
    const waiting = lanes.acquire("main");
    await vi.advanceTimersByTimeAsync(10);
    expect(emitWarning).toHaveBeenCalledWith(expect.stringContaining("logger down"));
    holder.release();
    (await waiting).release();
    expect(lanes.laneCount()).toBe(0);
  });
});

describe("LaneScheduler configuration and memory", () => {
  it("raising concurrency starts waiting entries at once, and the new limit outlives the idle lane", async () => {
    const lanes = new LaneScheduler();
    let running = 0;
    const gates = Array.from({ length: 4 }, () => deferred());
    const runs = gates.map((g) =>
      lanes.run("main", async () => {
        running++;
        await g.promise;
        running--;
      }),
    );
    await settle();
    expect(running).toBe(1);

    lanes.setConcurrency("main", 3);
    await settle();
    expect(running).toBe(3);
    for (const g of gates) g.resolve();
    await Promise.all(runs);
    expect(lanes.laneCount()).toBe(0);

    const again = Array.from({ length: 3 }, () => deferred());
    const againRuns = again.map((g) => lanes.run("main", () => g.promise));
    expect(lanes.snapshot("main")).toMatchObject({ active: 3, queued: 0 });
    for (const g of again) g.resolve();
    await Promise.all(againRuns);
  });

  it("rejects a concurrency that would wedge or break the lane", () => {
    const lanes = new LaneScheduler();
    expect(() => lanes.setConcurrency("main", 0)).toThrow(RangeError);
    expect(() => lanes.setConcurrency("main", 1.5)).toThrow(/integer >= 1/);
    expect(() => lanes.setConcurrency("main", Number.NaN)).toThrow(RangeError);
  });

  it("falls back to one at a time when the concurrency option returns nonsense", async () => {
    const lanes = new LaneScheduler({ concurrency: () => 0 });
    const gate = deferred();
    const first = lanes.run("main", () => gate.promise);
    await settle();
    expect(lanes.snapshot("main")).toMatchObject({ active: 1, concurrency: 1 });
    gate.resolve();
    await first;
  });

  it("forgets idle lanes: 10,000 sessions used once each leave nothing behind", async () => {
    const lanes = new LaneScheduler({ concurrency: laneConcurrencyFrom({ main: 8 }) });
    const runs: Promise<number>[] = [];
    for (let i = 0; i < 10_000; i++) {
      runs.push(runInSessionAndGlobalLanes(lanes, sessionLaneName(`s${i}`), "main", async () => i));
    }
    // Every session lane is held at once (each asks for the global lane only after its session slot arrives).
    expect(lanes.laneCount()).toBe(10_000);

    const results = await Promise.all(runs);
    expect(results[9_999]).toBe(9_999);
    expect(lanes.laneCount()).toBe(0);
  });

  it("forgets a lane whose only entries were aborted or cleared", async () => {
    const lanes = new LaneScheduler();
    const holder = await lanes.acquire("x");
    const controller = new AbortController();
    const aborted = lanes.acquire("x", { signal: controller.signal }).catch(() => "aborted");
    const cleared = lanes.acquire("x").catch(() => "cleared");
    controller.abort();
    lanes.clear("x");
    expect(await aborted).toBe("aborted");
    expect(await cleared).toBe("cleared");
    holder.release();
    holder.release(); // a second release must not free someone else's slot
    expect(lanes.laneCount()).toBe(0);
  });

  it("defaults the global lane to max(8, 4 x CPUs)", () => {
    expect(defaultMaxConcurrent(1)).toBe(8);
    expect(defaultMaxConcurrent(6)).toBe(24);
  });
});

describe("runInSessionAndGlobalLanes", () => {
  it("holds the session lane first and waits there without taking a global slot", async () => {
    let now = 0;
    const lanes = new LaneScheduler({ concurrency: laneConcurrencyFrom({ main: 1 }), now: () => now });
    const other = await lanes.acquire("main");
    let waits: { sessionWaitMs: number; globalWaitMs: number } | undefined;
    const firstTurn = deferred();
    const first = runInSessionAndGlobalLanes(lanes, "session:a", "main", async (w) => {
      waits = w;
      await firstTurn.promise;
    });
    await settle();
    // Session slot held, global slot awaited, task not started.
    expect(lanes.snapshot("session:a")).toMatchObject({ active: 1, queued: 0 });
    expect(lanes.snapshot("main")).toMatchObject({ active: 1, queued: 1 });
    expect(waits).toBeUndefined();

    now = 700;
    other.release();
    await settle();
    expect(waits).toEqual({ sessionWaitMs: 0, globalWaitMs: 700 });

    // A second turn for the same session queues on its session lane, leaving the global lane to others.
    const second = runInSessionAndGlobalLanes(lanes, "session:a", "main", async (w) => w);
    await settle();
    expect(lanes.snapshot("session:a")).toMatchObject({ active: 1, queued: 1 });
    expect(lanes.snapshot("main")).toMatchObject({ active: 1, queued: 0 });

    now = 1000;
    firstTurn.resolve();
    await first;
    await expect(second).resolves.toEqual({ sessionWaitMs: 300, globalWaitMs: 0 });
    expect(lanes.laneCount()).toBe(0);
  });

  it("releases both lanes, global first, when the task throws", async () => {
    const lanes = new LaneScheduler();
    const released: string[] = [];
    const acquire = lanes.acquire.bind(lanes);
    vi.spyOn(lanes, "acquire").mockImplementation(async (lane, opts): Promise<LaneSlot> => {
      const slot = await acquire(lane, opts);
      return {
        waitedMs: slot.waitedMs,
        release: () => {
          released.push(lane);
          slot.release();
        },
      };
    });

    const boom = new Error("tool exploded");
    await expect(
      runInSessionAndGlobalLanes(lanes, "session:a", "main", async () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(released).toEqual(["main", "session:a"]);
    expect(lanes.laneCount()).toBe(0);
  });

  it("releases the session lane when the wait for the global lane is aborted", async () => {
    const lanes = new LaneScheduler();
    const other = await lanes.acquire("main");
    const controller = new AbortController();
    const task = vi.fn(async () => {});
    const run = track(runInSessionAndGlobalLanes(lanes, "session:a", "main", task, { signal: controller.signal }));
    await settle();
    expect(lanes.snapshot("session:a")).toMatchObject({ active: 1 });

    controller.abort(new Error("stop pressed"));
    await settle();
    expect(run.state).toBe("rejected");
    expect(run.error).toBeInstanceOf(LaneAbortedError);
    expect(task).not.toHaveBeenCalled();
    expect(lanes.snapshot("session:a")).toBeUndefined();
    // The session is free for the next message right away, while the global lane is still busy.
    const next = track(lanes.acquire("session:a"));
    await settle();
    expect(next.state).toBe("fulfilled");
    (next.value as LaneSlot).release();
    other.release();
  });

  it("refuses to use the same lane as session and global lane", async () => {
    const lanes = new LaneScheduler();
    await expect(runInSessionAndGlobalLanes(lanes, "main", "main", async () => {})).rejects.toThrow(/must differ/);
    expect(lanes.laneCount()).toBe(0);
  });
});
