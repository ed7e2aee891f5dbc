import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ConfigError, parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { CronScheduler } from "./scheduler.js";
import { cleanUpHarnesses, harness, T0 } from "./scheduler.test-support.js";

afterEach(cleanUpHarnesses);

describe("cron config", () => {
  it("a bad schedule, a bad time zone and a duplicate id are config errors naming the key", () => {
    const problems = (() => {
      try {
        parseConfig({
          cron: {
            jobs: [
              { id: "a", schedule: "0 9 * *", message: "m" },
              { id: "b", schedule: "0 25 * * *", message: "m" },
              { id: "c", schedule: "0 9 * * *", tz: "Mars/Olympus", message: "m" },
              { id: "a", schedule: "0 9 * * *", message: "m" },
            ],
          },
        });
      } catch (err) {
        return (err as ConfigError).problems;
      }
      return [];
    })();
    expect(problems.join("\n")).toMatch(/cron\.jobs\[0\]\.schedule: expected 5 cron fields/);
    expect(problems.join("\n")).toMatch(/cron\.jobs\[1\]\.schedule: not a cron schedule/);
    expect(problems.join("\n")).toMatch(/cron\.jobs\[2\]\.tz: unknown time zone "Mars\/Olympus"/);
    expect(problems.join("\n")).toMatch(/cron\.jobs\[3\]\.id: duplicate job id "a" \(also cron\.jobs\[0\]\)/);
    expect(problems).toHaveLength(4);
  });
});

describe("cron scheduler (fake clock)", () => {
  it("a job every 2 seconds runs exactly 5 times in 10 seconds, each as a cron-lane turn of its own session", async () => {
    const h = harness({ jobs: [{ id: "tick", schedule: "*/2 * * * * *", message: "ping" }] });
    await h.scheduler.start();
    await h.advance(10);
    await Promise.all(h.accepted.map((a) => h.service.final(a.runId)));
    await h.settle();
    const runs = await h.runs("tick");
    expect(runs.map((r) => r.scheduledAt - T0)).toEqual([2000, 4000, 6000, 8000, 10000]);
    expect(runs.map((r) => r.status)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(h.accepted.map((a) => [a.sessionKey, a.lane, a.origin?.actor])).toEqual(
      Array(5).fill(["cron:tick", "cron", "cron:tick"]),
    );
    // isolated: every run starts a new transcript generation, so no run sees the previous ones
    expect(h.store.getSession("cron:tick")?.generation).toBe(5);
    expect(h.store.readTranscript("cron:tick", { kinds: ["message"] }).map((r) => r.message?.role)).toEqual([
      "user",
      "assistant",
    ]);
  });

  it("a job whose model stalls past its timeout is recorded as timeout, and the next job in the lane runs", async () => {
    const h = harness({
      // one lane slot: the next job waits behind the stalled one until its deadline and cleanup
      maxConcurrentRuns: 1,
      jobs: [
        // due at T0+10 (the 30th second); its model never answers and ignores the abort
        { id: "stuck", schedule: "30 * * * * *", message: "hang", model: "stall/m", timeoutSeconds: 3 },
        // due at T0+15, while "stuck" still holds the cron lane
        { id: "after", schedule: "35 * * * * *", message: "next" },
      ],
    });
    await h.scheduler.start();
    await h.advance(16);
    expect((await h.runs("after")).map((r) => r.status)).toEqual(["running"]); // waiting behind "stuck" in the lane
    await h.advance(3); // deadline at T0+13, then at most 5 s of cleanup: T0+18
    const [stuck] = await h.runs("stuck");
    expect(stuck).toMatchObject({ status: "timeout", errorKind: "timeout", startedAt: T0 + 10_000 });
    expect(stuck.endedAt).toBe(T0 + 18_000);
    await h.service.final(h.accepted[1].runId);
    await h.settle();
    const [after] = await h.runs("after");
    expect(after).toMatchObject({ status: "ok", scheduledAt: T0 + 15_000 });
    expect(after.startedAt).toBeGreaterThanOrEqual(T0 + 18_000);
  });

  it("missed runs while the gateway was down run once at start, not once per missed time", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-cron-"));
    const first = harness({ jobs: [{ id: "tenner", schedule: "*/10 * * * * *", message: "m" }] }, dir);
    // the last run was due 100 s before this start: ten fire times were missed since
    first.store.addCronRun({ jobId: "tenner", scheduledAt: T0 - 100_000, status: "ok", endedAt: T0 - 99_000 });
    await first.scheduler.start();
    await first.settle();
    await Promise.all(first.accepted.map((a) => first.service.final(a.runId)));
    expect(first.accepted).toHaveLength(1);
    expect((await first.runs("tenner")).map((r) => [r.scheduledAt - T0, r.status])).toEqual([
      [-100_000, "ok"],
      [-90_000, "ok"],
    ]);
    // and the schedule goes on from now: the next run is the next fire time, T0+10
    await first.advance(10);
    expect(first.accepted).toHaveLength(2);
  });

  it("a run left running by a stopped gateway is recorded as an error at the next start", async () => {
    const h = harness({ jobs: [{ id: "daily", schedule: "0 9 * * *", message: "m" }] });
    h.store.addCronRun({ jobId: "daily", scheduledAt: T0 - 5_000, status: "running", runId: "old-run" });
    await h.scheduler.start();
    expect(await h.runs("daily")).toEqual([
      {
        jobId: "daily",
        scheduledAt: T0 - 5_000,
        runId: "old-run",
        status: "error",
        errorKind: "gateway_restart",
        endedAt: T0,
      },
    ]);
    expect(await h.scheduler.health()).toEqual({
      jobs: 1,
      last: [{ jobId: "daily", status: "error", at: T0, runId: "old-run" }],
    });
  });

  it("cron-job-model-alias-and-allowlist: a job's model may be an alias; one outside agents.defaults.models is an error", async () => {
    const h = harness(
      {
        jobs: [
          { id: "aliased", schedule: "30 * * * * *", message: "m", model: "quick" },
          { id: "outside", schedule: "30 * * * * *", message: "m", model: "stall/m" },
        ],
      },
      undefined,
      { models: { "a/m": { alias: "quick" } } },
    );
    await h.scheduler.start();
    await h.advance(11);
    await h.settle();
    expect(await h.runs("aliased")).toMatchObject([{ status: "ok" }]);
    // refused at accept (the scheduler logs "cron: job could not start" with the chooser's message)
    expect(await h.runs("outside")).toMatchObject([{ status: "error", errorKind: "not_started" }]);
  });

  it("catchUp skip records the missed runs as one skipped entry and runs nothing at start", async () => {
    const h = harness({ catchUp: "skip", jobs: [{ id: "tenner", schedule: "*/10 * * * * *", message: "m" }] });
    h.store.addCronRun({ jobId: "tenner", scheduledAt: T0 - 100_000, status: "ok", endedAt: T0 - 99_000 });
    await h.scheduler.start();
    await h.settle();
    expect(h.accepted).toHaveLength(0);
    expect((await h.runs("tenner")).map((r) => [r.status, r.errorKind ?? null])).toEqual([
      ["ok", null],
      ["skipped", "missed"],
    ]);
  });

  it("a stopped scheduler starts nothing, and disabled jobs and cron.enabled: false never run", async () => {
    const h = harness({
      jobs: [
        { id: "on", schedule: "* * * * * *", message: "m" },
        { id: "off", schedule: "* * * * * *", message: "m", enabled: false },
      ],
    });
    await h.scheduler.start();
    await h.advance(1);
    h.scheduler.stop();
    expect(h.rt.clock).toBe(h.clock);
    // the run's events wait for the event writer's flush timer on the same clock: write them, so only the
    // scheduler's timers are left to count
    await h.rt.runEvents.close();
    expect(h.clock.pendingTimers).toBe(0);
    await h.advance(5);
    expect(h.accepted.map((a) => a.sessionKey)).toEqual(["cron:on"]);

    const off = harness({ enabled: false, jobs: [{ id: "x", schedule: "* * * * * *", message: "m" }] });
    await off.scheduler.start();
    await off.advance(3);
    expect(off.accepted).toHaveLength(0);
    expect(off.clock.pendingTimers).toBe(0);
  });

  it("tz: a job at 09:00 in Asia/Tokyo is next due at 00:00 UTC", async () => {
    const h = harness({ jobs: [{ id: "tokyo", schedule: "0 9 * * *", tz: "Asia/Tokyo", message: "m" }] });
    await h.scheduler.start();
    // T0 is 2023-11-14T22:13:20Z, so 09:00 in Tokyo (UTC+9) next comes at 2023-11-15T00:00Z
    expect(new Date((await h.scheduler.list())[0].nextRunAt ?? 0).toISOString()).toBe("2023-11-15T00:00:00.000Z");
  });

  it("a job that names an agent and a session runs there and keeps that session's history", async () => {
    const h = harness({
      jobs: [{ id: "digest", schedule: "*/5 * * * * *", message: "digest", agentId: "main", sessionKey: "inbox" }],
    });
    await h.scheduler.start();
    await h.advance(10);
    await Promise.all(h.accepted.map((a) => h.service.final(a.runId)));
    expect(h.accepted.map((a) => a.sessionKey)).toEqual(["agent:main:inbox", "agent:main:inbox"]);
    expect(h.store.getSession("agent:main:inbox")?.generation).toBe(1);
    expect(h.store.readTranscript("agent:main:inbox", { kinds: ["message"] })).toHaveLength(4);
  });

  it("RPC jobs persist; a config job's id is refused, and a config job cannot be removed", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-cron-"));
    const cfg = { jobs: [{ id: "cfg", schedule: "0 9 * * *", message: "m" }] };
    const h = harness(cfg, dir);
    await h.scheduler.add({ id: "mine", schedule: "0 8 * * 1-5", tz: "Europe/Berlin", message: "standup" });
    await expect(h.scheduler.add({ id: "cfg", schedule: "0 9 * * *", message: "x" })).rejects.toThrow(
      /params\.id: "cfg" is a job from the config/,
    );
    await expect(h.scheduler.remove("cfg")).rejects.toThrow(/params\.id: "cfg" is a job from the config/);
    await expect(h.scheduler.add({ id: "bad", schedule: "61 * * * *", message: "x" })).rejects.toThrow(
      /^params\.schedule:/,
    );
    await expect(h.scheduler.add({ id: "bad", schedule: "0 9 * * *", tz: "Mars/Base", message: "x" })).rejects.toThrow(
      /^params\.tz: unknown time zone "Mars\/Base"/,
    );
    await expect(h.scheduler.remove("nope")).rejects.toThrow(/params\.id: no cron job "nope"/);
    // a new scheduler over the same store (a restart) has the RPC job back
    const again = new CronScheduler({
      service: h.service,
      config: h.rt.config.cron,
      clock: h.clock,
      logger: silentLogger,
    });
    expect((await again.list()).map((j) => [j.id, j.source, j.tz ?? null])).toEqual([
      ["cfg", "config", null],
      ["mine", "rpc", "Europe/Berlin"],
    ]);
    expect(await again.remove("mine")).toBe(true);
    expect(h.store.listCronJobs()).toEqual([]);
  });
});
