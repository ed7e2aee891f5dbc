/*
 * Issue 25 item 9, on the scheduler's fake clock over a real service and a real SQLite store: a job whose model
 * hangs must not hold back the other jobs, every run has a deadline even without `timeoutSeconds`, `cron_runs` is
 * pruned while the gateway runs (not only at start), and a job's fields have length limits.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type ConfigError, parseConfig } from "../config/load.js";
import { CRON_PRUNE_INTERVAL_MS } from "./scheduler.js";
import { cleanUpHarnesses, harness, T0 } from "./scheduler.test-support.js";

afterEach(cleanUpHarnesses);

function configProblems(raw: unknown): string[] {
  try {
    parseConfig(raw);
  } catch (err) {
    return (err as ConfigError).problems;
  }
  return [];
}

describe("cron: a hanging job", () => {
  it("hanging-job-without-timeoutSeconds-does-not-hold-back-other-jobs", async () => {
    const h = harness({
      jobs: [
        // due at T0+10; its model never answers and ignores the abort; no timeoutSeconds
        { id: "hangs", schedule: "30 * * * * *", message: "hang", model: "stall/m" },
        // due at T0+15, while "hangs" still runs
        { id: "punctual", schedule: "35 * * * * *", message: "on time" },
      ],
    });
    await h.scheduler.start();
    await h.advance(16);
    const [hangs] = await h.runs("hangs");
    const [punctual] = await h.runs("punctual");
    console.log(
      `punctual: due at T0+${(punctual.scheduledAt - T0) / 1000}s, started at T0+${((punctual.startedAt ?? Number.NaN) - T0) / 1000}s, ${punctual.status}; hangs: ${hangs.status}`,
    );
    expect(hangs.status).toBe("running");
    expect(punctual).toMatchObject({ status: "ok", scheduledAt: T0 + 15_000, startedAt: T0 + 15_000 });
  });

  it("job-without-timeoutSeconds-is-aborted-at-the-default-cron-deadline", async () => {
    expect(parseConfig({}).cron).toMatchObject({ defaultTimeoutSeconds: 3600, maxConcurrentRuns: 2 });
    const h = harness({
      defaultTimeoutSeconds: 20,
      // one slot: the job behind the hanging one waits for the deadline and the cleanup, and no longer
      maxConcurrentRuns: 1,
      jobs: [
        { id: "hangs", schedule: "30 * * * * *", message: "hang", model: "stall/m" },
        { id: "behind", schedule: "35 * * * * *", message: "next" },
      ],
    });
    await h.scheduler.start();
    await h.advance(16);
    expect((await h.runs("behind")).map((r) => r.status)).toEqual(["running"]);
    // the deadline at T0+30 (20 s after the start), then at most 5 s of cleanup: T0+35
    await h.advance(19);
    const [hangs] = await h.runs("hangs");
    expect(hangs).toMatchObject({
      status: "timeout",
      errorKind: "timeout",
      startedAt: T0 + 10_000,
      endedAt: T0 + 35_000,
    });
    await h.service.final(h.accepted[1].runId);
    await h.settle();
    const [behind] = await h.runs("behind");
    console.log(`behind: due at T0+15s, started at T0+${((behind.startedAt ?? Number.NaN) - T0) / 1000}s`);
    expect(behind).toMatchObject({ status: "ok", startedAt: T0 + 35_000 });
  });

  it("cron.defaultTimeoutSeconds and cron.maxConcurrentRuns out of range are config errors naming the key", () => {
    const problems = configProblems({ cron: { defaultTimeoutSeconds: -1, maxConcurrentRuns: 0 } });
    expect(problems.join("\n")).toMatch(/cron\.defaultTimeoutSeconds: Too small/);
    expect(problems.join("\n")).toMatch(/cron\.maxConcurrentRuns: Too small/);
  });
});

describe("cron: run records", () => {
  it("cron-runs-are-pruned-while-the-gateway-runs-not-only-at-start", async () => {
    // a run every second for 250 s, with the default of 100 records kept per job
    const h = harness({ jobs: [{ id: "flood", schedule: "* * * * * *", message: "m" }] });
    await h.scheduler.start();
    let most = 0;
    for (let s = 0; s < 250; s++) {
      await h.advance(1);
      most = Math.max(most, h.store.recentCronRuns(["flood"], 10_000).get("flood")?.length ?? 0);
    }
    const left = h.store.recentCronRuns(["flood"], 10_000).get("flood")?.length ?? 0;
    console.log(`250 fires, keepLines 100: at most ${most} records at any time, ${left} at the end`);
    expect(most).toBeLessThanOrEqual(200);
    expect(left).toBeGreaterThanOrEqual(100);
  });

  it("cron.runLog.keepLines bounds every job's records, also a removed job's, on the prune cadence", async () => {
    const h = harness({ runLog: { keepLines: 5 }, jobs: [{ id: "flood", schedule: "* * * * * *", message: "m" }] });
    // a job that is gone from the config left 30 records behind
    for (let i = 0; i < 30; i++) h.store.addCronRun({ jobId: "gone", scheduledAt: T0 - 100_000 + i, status: "ok" });
    await h.scheduler.start();
    let most = 0;
    for (let s = 0; s < 40; s++) {
      await h.advance(1);
      most = Math.max(most, h.store.recentCronRuns(["flood"], 10_000).get("flood")?.length ?? 0);
    }
    expect(most).toBeLessThanOrEqual(10);
    h.store.addCronRun({ jobId: "gone", scheduledAt: T0, status: "ok" });
    h.scheduler.stop();
    await h.scheduler.start();
    // the periodic pass (not a start): every job's records, including the ones no job writes any more
    for (let i = 0; i < 30; i++) h.store.addCronRun({ jobId: "gone", scheduledAt: T0 + i, status: "ok" });
    h.clock.advance(CRON_PRUNE_INTERVAL_MS);
    await h.settle();
    expect(h.store.recentCronRuns(["gone"], 10_000).get("gone")?.length).toBe(5);
  });

  it("cron.runLog.keepLines out of range is a config error naming the key", () => {
    expect(configProblems({ cron: { runLog: { keepLines: 0 } } }).join("\n")).toMatch(
      /cron\.runLog\.keepLines: Too small/,
    );
  });
});

describe("cron: job field lengths", () => {
  it("a-2-MB-schedule-is-refused-naming-the-key-without-echoing-it", () => {
    const huge = `${"1,".repeat(1024 * 1024)}2 * * * *`;
    const problems = configProblems({ cron: { jobs: [{ id: "big", schedule: huge, message: "m" }] } });
    console.log(problems.join("\n"));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^cron\.jobs\[0\]\.schedule: expected at most 256 characters, got 2097161$/);
  });

  it("tz, message and model have length limits too, each named", () => {
    const problems = configProblems({
      cron: {
        jobs: [
          {
            id: "long",
            schedule: "0 9 * * *",
            tz: `Europe/${"x".repeat(100)}`,
            message: "m".repeat(40_000),
            model: `a/${"m".repeat(300)}`,
          },
        ],
      },
    });
    console.log(problems.join("\n"));
    expect(problems.join("\n")).toMatch(/cron\.jobs\[0\]\.tz: expected at most 64 characters, got 107/);
    expect(problems.join("\n")).toMatch(/cron\.jobs\[0\]\.message: expected at most 32768 characters, got 40000/);
    expect(problems.join("\n")).toMatch(/cron\.jobs\[0\]\.model: expected at most 256 characters, got 302/);
  });

  it("cron.add through the scheduler refuses an over-long schedule with the param named", async () => {
    const h = harness({});
    await expect(
      h.scheduler.add({ id: "big", schedule: `${"1,".repeat(200)}2 * * * *`, message: "m" }),
    ).rejects.toThrow(/^params\.schedule: expected at most 256 characters, got 409$/);
  });
});
