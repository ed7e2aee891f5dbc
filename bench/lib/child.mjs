// Child processes: every metric runs in its own process so that process start, RSS and heap figures are not
// polluted by earlier metrics, and so a stuck metric is killed by its time bound instead of hanging the run.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { nowMs } from "./stats.mjs";

export const BENCH_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ROOT_DIR = path.resolve(BENCH_DIR, "..");
export const CLI = path.join(ROOT_DIR, "dist", "cli", "main.js");

/**
 * Runs `node [execArgv] script` with `options` as its one JSON argument, and resolves with the JSON object on the
 * last line of its stdout. Killed after timeoutMs. stderr is passed through when `verbose` is set.
 */
export function runMetricChild(script, options, { execArgv = [], timeoutMs = 120_000, verbose = false, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...execArgv, path.join(BENCH_DIR, script), JSON.stringify(options)], {
      stdio: ["ignore", "pipe", "pipe"],
      env: env ?? process.env,
      cwd: ROOT_DIR,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d) => {
      stderr += d;
      if (verbose) process.stderr.write(d);
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const lines = stdout.trim().split("\n");
      let result;
      try {
        result = JSON.parse(lines[lines.length - 1]);
      } catch {
        result = undefined;
      }
      if (code === 0 && result !== undefined) {
        resolve(result);
        return;
      }
      const why = signal === "SIGKILL" ? `killed after ${timeoutMs} ms` : `exit ${code ?? signal}`;
      reject(new Error(`${script}: ${why}\n${stderr.trim().split("\n").slice(-15).join("\n")}`));
    });
  });
}

/**
 * Spawns a command and resolves with the wall time (ms) from spawn to exit, its exit code and output.
 * This is what a user sees: process start, module loading, the work, and teardown.
 */
export function timeProcess(command, args, { env, cwd = ROOT_DIR, timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const started = nowMs();
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: env ?? process.env, cwd });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // "exit", not "close": the time ends when the process does, not when its pipes have drained
    child.on("exit", (code, signal) => {
      const ms = nowMs() - started;
      clearTimeout(timer);
      child.on("close", () => resolve({ ms, code, signal, stdout, stderr }));
    });
  });
}

/** Starts the fake model in its own process; resolves with its base URL and a stop function. */
export function startFakeModelProcess() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(BENCH_DIR, "fake-model-process.mjs")], {
      stdio: ["pipe", "pipe", "inherit"],
      cwd: ROOT_DIR,
    });
    let buf = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("the fake model process did not start within 10 s"));
    }, 10_000);
    child.on("error", reject);
    child.stdout.setEncoding("utf8").on("data", (d) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      clearTimeout(timer);
      const { baseUrl } = JSON.parse(buf.slice(0, nl));
      resolve({
        baseUrl,
        pid: child.pid,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done();
            const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
            child.once("exit", () => {
              clearTimeout(kill);
              done();
            });
            child.stdin.end();
          }),
      });
    });
  });
}

/** For metric scripts: the options object passed by runMetricChild, and how to hand back the result. */
export function childOptions() {
  return JSON.parse(process.argv[2] ?? "{}");
}

export function emitResult(result) {
  process.stdout.write(`\n${JSON.stringify(result)}\n`);
}

export function log(...parts) {
  process.stderr.write(`${parts.join(" ")}\n`);
}
