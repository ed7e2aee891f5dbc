/*
 * Cron as a user runs it: a real `loopgate gateway` child with a job in its config, and `loopgate cron …` child
 * processes talking to it. Real time, so the count of a job every 2 s over ~10 s is 5 ± 1 (the exact count is
 * pinned on a fake clock in src/cron/scheduler.test.ts).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { CronListResult, HealthResult } from "../../src/protocol/payloads.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(root, "dist", "cli", "main.js");
const script = path.join(root, "test", "fixtures", "gateway", "reply.script.json5");

const cleanup: Array<() => void> = [];
afterAll(() => {
  for (const fn of cleanup.splice(0)) fn();
});

function sandbox(config: Record<string, unknown>): { env: NodeJS.ProcessEnv; configFile: string } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-cron-")));
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("LOOPGATE_")) env[k] = v;
  Object.assign(env, { LOOPGATE_STATE_DIR: path.join(dir, "state"), HOME: dir, NO_COLOR: "1" });
  const configFile = path.join(dir, "loopgate.json5");
  fs.writeFileSync(configFile, JSON.stringify(config));
  return { env, configFile };
}

interface Gateway {
  child: ChildProcess;
  url?: string;
  code: Promise<number | null>;
  stderr: () => string;
}

async function startGateway(configFile: string, env: NodeJS.ProcessEnv): Promise<Gateway> {
  const child = spawn(process.execPath, [cli, "gateway", "--port", "0", "--config", configFile], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanup.push(() => child.kill("SIGKILL"));
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const code = new Promise<number | null>((resolve) => child.on("close", resolve));
  const url = await new Promise<string | undefined>((resolve) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      const m = /listening on (ws:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    void code.then(() => resolve(undefined));
  });
  return { child, url, code, stderr: () => stderr };
}

function loopgate(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { env, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const config = {
  models: { providers: { s: { api: "scripted", script } } },
  agents: { defaults: { model: { primary: "s/m" } } },
  cron: { jobs: [{ id: "every2", schedule: "*/2 * * * * *", message: "tick" }] },
};

describe("loopgate cron against a running gateway", () => {
  it("a job every 2 s runs about 5 times in 10 s, and cron list, health and the RPC jobs show it", async () => {
    const { env, configFile } = sandbox(config);
    const gw = await startGateway(configFile, env);
    expect(gw.url, gw.stderr()).toBeDefined();
    const at = ["--url", gw.url!];
    const startedAt = Date.now();
    await sleep(10_000);

    const list = await loopgate(["cron", "list", "--json", "--runs", "100", ...at], env);
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as CronListResult;
    const job = listed.jobs.find((j) => j.id === "every2");
    expect(job).toMatchObject({ source: "config", sessionKey: "cron:every2", enabled: true });
    const done = job!.runs.filter((r) => r.status === "ok" && r.scheduledAt <= startedAt + 10_000);
    expect(done.length).toBeGreaterThanOrEqual(4);
    expect(done.length).toBeLessThanOrEqual(6);
    // every fire time is on an even second, none twice
    const times = done.map((r) => r.scheduledAt);
    expect(times.every((t) => t % 2000 === 0)).toBe(true);
    expect(new Set(times).size).toBe(times.length);

    // health: the job count and its last result
    const health = await loopgate(["health", "--json", ...at], env);
    const h = JSON.parse(health.stdout) as HealthResult;
    expect(h.cron?.jobs).toBe(1);
    expect(h.cron?.last[0]).toMatchObject({ jobId: "every2" });

    // an added job, run now, then removed; the config job cannot be removed nor shadowed
    const add = await loopgate(
      ["cron", "add", "--id", "nightly", "--schedule", "0 3 * * *", "--tz", "Europe/Berlin", "-m", "report", ...at],
      env,
    );
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toMatch(/^added nightly: next run \d{4}-\d\d-\d\dT0[12]:00:00\.000Z/);
    const runNow = await loopgate(["cron", "run", "nightly", "--json", ...at], env);
    expect(runNow.code, runNow.stderr).toBe(0);
    expect(JSON.parse(runNow.stdout)).toMatchObject({ ok: true, id: "nightly" });
    const shadow = await loopgate(["cron", "add", "--id", "every2", "--schedule", "* * * * *", "-m", "x", ...at], env);
    expect(shadow.code).toBe(2);
    expect(shadow.stderr).toContain('params.id: "every2" is a job from the config');
    const badTz = await loopgate(
      ["cron", "add", "--id", "x", "--schedule", "* * * * *", "--tz", "Nowhere", "-m", "x", ...at],
      env,
    );
    expect(badTz.code).toBe(2);
    expect(badTz.stderr).toContain('params.tz: unknown time zone "Nowhere"');
    const rmConfig = await loopgate(["cron", "rm", "every2", ...at], env);
    expect(rmConfig.code).toBe(2);
    expect(rmConfig.stderr).toContain("is a job from the config");
    const rm = await loopgate(["cron", "rm", "nightly", ...at], env);
    expect(rm.code, rm.stderr).toBe(0);
    const again = JSON.parse((await loopgate(["cron", "list", "--json", ...at], env)).stdout) as CronListResult;
    expect(again.jobs.map((j) => j.id)).toEqual(["every2"]);

    gw.child.kill("SIGTERM");
    expect(await gw.code).toBe(0);
  }, 60_000);
});
