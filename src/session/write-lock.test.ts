/*
 * Process-level behaviour of the session write lock.
 *
 * Other processes are real child processes (test/fixtures/write-lock/holder.mjs). They need the lock module
 * as JavaScript, and Node 20 cannot run TypeScript, so beforeAll transpiles src/session/write-lock.ts and the
 * liveness rule it uses (src/infra/process-liveness.ts) with the project's own TypeScript into a temp directory.
 * That is robust because both import only Node built-ins besides each other (asserted below), need no build of
 * the rest of the tree, and never touch the shared dist/.
 *
 * Waiting is driven by an injected clock whose sleep returns at once and advances fake time, so nothing
 * here depends on how fast the machine is.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readProcessStartTime } from "../infra/process-liveness.js";
import {
  ACQUIRE_TIMEOUT_ENV,
  ACQUIRE_TIMEOUT_ENV_ALIAS,
  acquireSessionWriteLock as acquireUntracked,
  heldSessionWriteLocks,
  ReentrantLockError,
  resolveAcquireTimeoutMs,
  resolveMaxHoldMs,
  SessionBusyError,
  type WriteLockClock,
  type WriteLockHandle,
  type WriteLockOptions,
  withSessionWriteLock,
} from "./write-lock.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const sourcePath = path.join(here, "write-lock.ts");
const livenessPath = path.resolve(here, "../infra/process-liveness.ts");
const fixturePath = path.resolve(here, "../../test/fixtures/write-lock/holder.mjs");
const hasProc = fs.existsSync("/proc/self/stat");

let moduleDir: string;
let compiledModule: string;
let dir: string;
let lockPath: string;
const children: ChildProcess[] = [];
const handles: WriteLockHandle[] = [];

/** Every handle is released after its test, so one failing test cannot leave a lock held for the next. */
async function acquireSessionWriteLock(target: string, opts?: WriteLockOptions): Promise<WriteLockHandle> {
  const handle = await acquireUntracked(target, opts);
  handles.push(handle);
  return handle;
}

function transpile(file: string): string {
  return ts.transpileModule(fs.readFileSync(file, "utf8"), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: file,
  }).outputText;
}

beforeAll(() => {
  const lock = transpile(sourcePath).replace('"../infra/process-liveness.js"', '"./process-liveness.mjs"');
  const liveness = transpile(livenessPath);
  // Any other relative import would not resolve from the temp directory; fail loudly instead of mysteriously.
  for (const [name, out] of [
    ["write-lock.ts", lock.replace('"./process-liveness.mjs"', "")],
    ["process-liveness.ts", liveness],
  ]) {
    if (/from\s+["']\.\.?\//.test(out)) throw new Error(`${name} must import only node built-ins`);
  }
  moduleDir = fs.mkdtempSync(path.join(os.tmpdir(), "write-lock-module-"));
  compiledModule = path.join(moduleDir, "write-lock.mjs");
  fs.writeFileSync(compiledModule, lock);
  fs.writeFileSync(path.join(moduleDir, "process-liveness.mjs"), liveness);
});

afterAll(() => {
  fs.rmSync(moduleDir, { recursive: true, force: true });
});

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "write-lock-"));
  // Nested on purpose: the lock must create its missing parent directories.
  lockPath = path.join(dir, "sessions", "s1", "transcript.lock");
});

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  const leaked = heldSessionWriteLocks();
  for (const handle of handles.splice(0)) await handle.release();
  fs.rmSync(dir, { recursive: true, force: true });
  expect(leaked, "a test left a lock held").toEqual([]);
});

interface FakeClock extends WriteLockClock {
  sleeps: number[];
  elapsed(): number;
}

/** Sleep returns at once and moves fake time; `onSleep` lets a test act at a given retry. */
function fakeClock(
  onSleep?: (call: number, signal?: AbortSignal) => Promise<void> | void,
  start = Date.now(),
): FakeClock {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    elapsed: () => now - start,
    async sleep(ms, signal) {
      sleeps.push(ms);
      await onSleep?.(sleeps.length, signal);
      if (signal?.aborted) throw signal.reason;
      now += ms;
    },
  };
}

interface Child {
  proc: ChildProcess;
  next(): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startChild(mode: "hold" | "exit-holding", env: Record<string, string> = {}): Child {
  const proc = spawn(process.execPath, [fixturePath, mode, lockPath], {
    env: { ...process.env, ...env, WRITE_LOCK_MODULE: compiledModule },
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.push(proc);
  let stderr = "";
  proc.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on("exit", (code, signal) => resolve({ code, signal }));
  });
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  return {
    proc,
    exited,
    async next() {
      const { value, done } = await lines.next();
      if (done) throw new Error(`child ${proc.pid} ended without output; stderr: ${stderr}`);
      return value;
    },
  };
}

async function startHolder(mode: "hold" | "exit-holding" = "hold", env: Record<string, string> = {}): Promise<Child> {
  const child = startChild(mode, env);
  expect(await child.next()).toBe(`acquired ${child.proc.pid}`);
  return child;
}

function readPayload(file = lockPath): { pid: number; starttime: string | null; createdAt: number } {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

function writeLockFile(content: object | string): void {
  fs.mkdirSync(path.dirname(lockPath), { recursive: true });
  fs.writeFileSync(lockPath, typeof content === "string" ? content : JSON.stringify(content));
}

async function deadPid(): Promise<number> {
  const proc = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => proc.on("exit", resolve));
  return proc.pid!;
}

describe("two processes", () => {
  it("a second writer waits while another process holds the lock and gets it once that one releases", async () => {
    const holder = await startHolder();
    let releasedAtRetry = 0;
    const clock = fakeClock(async (call) => {
      if (call !== 3) return;
      // Only after the waiter has been turned away three times does the other process let go.
      holder.proc.stdin!.write("release\n");
      expect(await holder.next()).toBe("released");
      releasedAtRetry = call;
    });

    const handle = await acquireSessionWriteLock(lockPath, { clock, acquireTimeoutMs: 30_000 });

    expect(releasedAtRetry).toBe(3);
    expect(clock.sleeps.length).toBe(3);
    expect(readPayload().pid).toBe(process.pid);
    expect(await holder.exited).toEqual({ code: 0, signal: null });
    await handle.release();
    expect(fs.existsSync(lockPath)).toBe(false);
  });

  it("a waiter reports once, before its first wait, which process holds the lock", async () => {
    const holder = await startHolder();
    const reports: Array<{ holderPid?: number; lockPath: string; sleepsSoFar: number }> = [];
    const clock = fakeClock(async (call) => {
      if (call !== 4) return;
      holder.proc.stdin!.write("release\n");
      expect(await holder.next()).toBe("released");
    });

    const handle = await acquireSessionWriteLock(lockPath, {
      clock,
      acquireTimeoutMs: 30_000,
      onWait: (info) => reports.push({ ...info, sleepsSoFar: clock.sleeps.length }),
    });
    await handle.release();

    expect(clock.sleeps.length).toBe(4);
    expect(reports).toEqual([{ holderPid: holder.proc.pid, lockPath, sleepsSoFar: 0 }]);
  });

  it("a free lock is taken without reporting a wait", async () => {
    const reports: unknown[] = [];
    const handle = await acquireSessionWriteLock(lockPath, { clock: fakeClock(), onWait: (i) => reports.push(i) });
    await handle.release();
    expect(reports).toEqual([]);
  });

  it("a writer that cannot get the lock in time fails with a session-busy error naming the holder pid and path", async () => {
    const holder = await startHolder();
    const clock = fakeClock();

    const err = await acquireSessionWriteLock(lockPath, { clock, acquireTimeoutMs: 2_000 }).catch((e) => e);

    expect(err).toBeInstanceOf(SessionBusyError);
    expect(err.code).toBe("SESSION_BUSY");
    expect(err.holderPid).toBe(holder.proc.pid);
    expect(err.lockPath).toBe(lockPath);
    expect(err.message).toContain("session is busy");
    expect(err.message).toContain(`pid ${holder.proc.pid}`);
    expect(err.message).toContain(lockPath);
    expect(clock.elapsed()).toBe(2_000);
    // The holder was never disturbed.
    expect(readPayload().pid).toBe(holder.proc.pid);
  });

  it("the waiter's backoff grows from 10 ms to at most 250 ms", async () => {
    await startHolder();
    const clock = fakeClock();
    await expect(acquireSessionWriteLock(lockPath, { clock, acquireTimeoutMs: 3_000 })).rejects.toThrow(
      SessionBusyError,
    );
    expect(clock.sleeps[0]).toBeLessThanOrEqual(10);
    expect(Math.max(...clock.sleeps)).toBeLessThanOrEqual(250);
    expect(Math.max(...clock.sleeps)).toBeGreaterThan(100);
  });

  it("aborting the signal stops the wait with the abort reason", async () => {
    await startHolder();
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const clock = fakeClock((call) => {
      if (call === 2) controller.abort(reason);
    });
    await expect(
      acquireSessionWriteLock(lockPath, { clock, acquireTimeoutMs: 60_000, signal: controller.signal }),
    ).rejects.toBe(reason);
    expect(clock.sleeps.length).toBe(2);
  });
});

describe("stale locks are taken over", () => {
  it("a lock whose holder pid is dead is reclaimed at once", async () => {
    const pid = await deadPid();
    writeLockFile({ pid, starttime: "1", createdAt: Date.now(), maxHoldMs: 600_000 });

    const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 0 });

    expect(readPayload().pid).toBe(process.pid);
    await handle.release();
  });

  it.runIf(hasProc)(
    "a lock whose pid now belongs to a different process (start time differs) is reclaimed",
    async () => {
      const livePid = process.ppid;
      const realStart = readProcessStartTime(livePid);
      expect(realStart).toMatch(/^\d+$/);

      writeLockFile({ pid: livePid, starttime: realStart, createdAt: Date.now(), maxHoldMs: 600_000 });
      const busy = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 0 }).catch((e) => e);
      expect(busy).toBeInstanceOf(SessionBusyError);
      expect(busy.holderPid).toBe(livePid);

      writeLockFile({ pid: livePid, starttime: `${realStart}1`, createdAt: Date.now(), maxHoldMs: 600_000 });
      const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 0 });
      expect(readPayload().pid).toBe(process.pid);
      await handle.release();
    },
  );

  it("an old lock file without a valid payload is reclaimed at once", async () => {
    writeLockFile("{ not json");
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(lockPath, past, past);

    const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 0 });

    expect(readPayload().pid).toBe(process.pid);
    await handle.release();
  });

  it("a fresh lock file without a payload is respected until it is older than staleMalformedMs", async () => {
    writeLockFile("");
    // Fake time and the file's mtime share one origin, so "older than 5000 ms" is exact, not racy.
    const t0 = Math.floor(Date.now() / 1000) * 1000;
    fs.utimesSync(lockPath, t0 / 1000, t0 / 1000);
    const short = fakeClock(undefined, t0);
    const busy = await acquireSessionWriteLock(lockPath, {
      clock: short,
      acquireTimeoutMs: 1_000,
      staleMalformedMs: 5_000,
    }).catch((e) => e);
    expect(busy).toBeInstanceOf(SessionBusyError);
    expect(busy.holderPid).toBeUndefined();
    expect(fs.readFileSync(lockPath, "utf8")).toBe("");

    const patient = fakeClock(undefined, t0);
    const handle = await acquireSessionWriteLock(lockPath, {
      clock: patient,
      acquireTimeoutMs: 20_000,
      staleMalformedMs: 5_000,
    });
    expect(patient.elapsed()).toBeGreaterThanOrEqual(5_000);
    expect(readPayload().pid).toBe(process.pid);
    await handle.release();
  });

  it("a live holder is waited for until createdAt + maxHoldMs, then taken over", async () => {
    const livePid = process.ppid;
    const t0 = Date.now();
    writeLockFile({
      pid: livePid,
      starttime: readProcessStartTime(livePid) ?? null,
      createdAt: t0,
      maxHoldMs: 3_000,
    });

    const short = fakeClock(undefined, t0);
    await expect(acquireSessionWriteLock(lockPath, { clock: short, acquireTimeoutMs: 1_000 })).rejects.toThrow(
      SessionBusyError,
    );

    const patient = fakeClock(undefined, t0);
    const handle = await acquireSessionWriteLock(lockPath, { clock: patient, acquireTimeoutMs: 10_000 });
    expect(patient.elapsed()).toBeGreaterThanOrEqual(3_000);
    expect(readPayload().pid).toBe(process.pid);
    await handle.release();
  });

  it("a holder whose lock was taken over after its hold bound does not delete the new holder's lock", async () => {
    // Our hold looks 60 s old with a 1 s bound, so the other process may take it over at once.
    const longAgo = fakeClock();
    const start = Date.now() - 60_000;
    const old = await acquireSessionWriteLock(lockPath, {
      clock: { now: () => start, sleep: longAgo.sleep },
      maxHoldMs: 1_000,
    });
    const taker = await startHolder();

    await old.release();

    expect(readPayload().pid).toBe(taker.proc.pid);
    taker.proc.stdin!.write("release\n");
    expect(await taker.next()).toBe("released");
    expect(fs.existsSync(lockPath)).toBe(false);
  });
});

describe("takeover between two waiters", () => {
  it("a waiter leaves a stale lock alone while another process is taking it over, and a crashed taker does not wedge it", async () => {
    const dead = await deadPid();
    const stale = JSON.stringify({ pid: dead, starttime: null, createdAt: Date.now(), maxHoldMs: 600_000 });
    writeLockFile(stale);
    const guard = `${lockPath}.takeover`;
    const livePid = process.ppid;
    fs.writeFileSync(
      guard,
      JSON.stringify({
        pid: livePid,
        starttime: readProcessStartTime(livePid) ?? null,
        createdAt: Date.now(),
        maxHoldMs: 0,
      }),
    );

    const busy = await acquireSessionWriteLock(lockPath, { clock: fakeClock(), acquireTimeoutMs: 500 }).catch((e) => e);
    expect(busy).toBeInstanceOf(SessionBusyError);
    expect(fs.readFileSync(lockPath, "utf8")).toBe(stale);

    // The taker died mid-takeover: its guard is cleared and the stale lock reclaimed without waiting it out.
    fs.writeFileSync(guard, JSON.stringify({ pid: dead, starttime: null, createdAt: Date.now(), maxHoldMs: 0 }));
    const clock = fakeClock();
    const handle = await acquireSessionWriteLock(lockPath, { clock, acquireTimeoutMs: 500 });
    expect(readPayload().pid).toBe(process.pid);
    expect(fs.existsSync(guard)).toBe(false);
    await handle.release();
  });
});

describe("reentrancy", () => {
  it("a nested acquire of a lock this process holds fails at once instead of waiting", async () => {
    const outer = await acquireSessionWriteLock(lockPath);
    const clock = fakeClock();

    await expect(acquireSessionWriteLock(lockPath, { clock, acquireTimeoutMs: 60_000 })).rejects.toThrow(
      ReentrantLockError,
    );
    expect(clock.sleeps).toEqual([]);
    // The outer hold is untouched.
    expect(readPayload().pid).toBe(process.pid);
    await outer.release();
    expect(fs.existsSync(lockPath)).toBe(false);
  });

  it("with allowReentrant every acquire needs its own release and the file goes at the last one", async () => {
    const outer = await acquireSessionWriteLock(lockPath);
    const inner = await acquireSessionWriteLock(lockPath, { allowReentrant: true });

    await inner.release();
    await inner.release(); // idempotent: must not count as the outer release
    expect(fs.existsSync(lockPath)).toBe(true);

    await outer.release();
    expect(fs.existsSync(lockPath)).toBe(false);
  });

  it("withSessionWriteLock releases the lock even when the callback throws", async () => {
    await expect(
      withSessionWriteLock(lockPath, () => {
        expect(readPayload().pid).toBe(process.pid);
        throw new Error("write failed");
      }),
    ).rejects.toThrow("write failed");
    expect(fs.existsSync(lockPath)).toBe(false);
    await expect(withSessionWriteLock(lockPath, () => 42)).resolves.toBe(42);
  });
});

describe("process exit and signals", () => {
  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s to a holder removes its lock and still ends it by that signal",
    async (sig) => {
      const holder = await startHolder();
      expect(fs.existsSync(lockPath)).toBe(true);

      holder.proc.kill(sig);

      expect(await holder.exited).toEqual({ code: null, signal: sig });
      expect(fs.existsSync(lockPath)).toBe(false);
    },
  );

  it("a holder killed after its lock was taken over leaves the new holder's lock in place", async () => {
    const holder = await startHolder("hold", { HOLD_MAX_MS: "1" });
    // A waiter whose clock is a second ahead sees the 1 ms hold bound long passed.
    const ahead = fakeClock();
    const handle = await acquireSessionWriteLock(lockPath, {
      clock: { now: () => ahead.now() + 1_000, sleep: ahead.sleep },
      acquireTimeoutMs: 0,
    });

    holder.proc.kill("SIGTERM");

    expect(await holder.exited).toEqual({ code: null, signal: "SIGTERM" });
    expect(readPayload().pid).toBe(process.pid);
    await handle.release();
  });

  it("a holder that exits without releasing leaves no lock behind", async () => {
    const holder = await startHolder("exit-holding");
    expect(await holder.exited).toEqual({ code: 0, signal: null });
    expect(fs.existsSync(lockPath)).toBe(false);
  });

  it("kill -9 leaves the lock file, and the next writer takes it at once", async () => {
    const holder = await startHolder();
    holder.proc.kill("SIGKILL");
    await holder.exited;
    expect(readPayload().pid).toBe(holder.proc.pid);

    const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 0 });

    expect(readPayload().pid).toBe(process.pid);
    await handle.release();
  });
});

describe("a lock kept idle between turns", () => {
  it("a process waiting for a session gets it once the holder has stayed idle, while the holder lives on", async () => {
    const holder = await startHolder("hold", { KEEP_IDLE_MS: "200" });
    holder.proc.stdin!.write("release\n");
    expect(await holder.next()).toBe("released");
    // released by its turn but kept: still the holder's file
    expect(readPayload().pid).toBe(holder.proc.pid);

    const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 10_000 });

    expect(readPayload().pid).toBe(process.pid);
    expect(holder.proc.exitCode).toBeNull();
    await handle.release();
  });

  it("kill -9 of a process keeping its lock idle: the next writer takes it at once", async () => {
    const holder = await startHolder("hold", { KEEP_IDLE_MS: "600000" });
    holder.proc.stdin!.write("release\n");
    expect(await holder.next()).toBe("released");
    holder.proc.kill("SIGKILL");
    await holder.exited;
    expect(readPayload().pid).toBe(holder.proc.pid);

    const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 0 });

    expect(readPayload().pid).toBe(process.pid);
    await handle.release();
  });

  it("a holder that exits while keeping its lock idle leaves no lock behind", async () => {
    const holder = await startHolder("hold", { KEEP_IDLE_MS: "600000" });
    holder.proc.stdin!.write("release\n");
    expect(await holder.next()).toBe("released");
    holder.proc.kill("SIGTERM");
    await holder.exited;
    expect(fs.existsSync(lockPath)).toBe(false);
  });
});

describe("lock payload", () => {
  it.runIf(hasProc)("records pid, process start time, createdAt and maxHoldMs", async () => {
    const clock = fakeClock();
    const handle = await acquireSessionWriteLock(lockPath, { clock, maxHoldMs: resolveMaxHoldMs(30_000, 5_000) });
    expect(JSON.parse(fs.readFileSync(lockPath, "utf8"))).toEqual({
      pid: process.pid,
      starttime: readProcessStartTime(process.pid),
      createdAt: clock.now(),
      maxHoldMs: 35_000,
    });
    await handle.release();
  });

  it("the hold bound follows the run timeout plus grace; unlimited runs have none", () => {
    expect(resolveMaxHoldMs(60_000, 1_000)).toBe(61_000);
    expect(resolveMaxHoldMs(0)).toBe(Number.POSITIVE_INFINITY);
    expect(resolveMaxHoldMs(undefined)).toBe(10 * 60_000);
  });
});

describe("acquire timeout setting", () => {
  it("defaults to 60000 ms, and the config value applies when no env is set", () => {
    expect(resolveAcquireTimeoutMs(undefined, {})).toBe(60_000);
    expect(resolveAcquireTimeoutMs(5_000, {})).toBe(5_000);
  });

  it("the env variable beats the config value", () => {
    expect(resolveAcquireTimeoutMs(5_000, { [ACQUIRE_TIMEOUT_ENV]: "1234" })).toBe(1234);
  });

  it("the OpenClaw env name works as an alias, below the Loopgate name", () => {
    expect(resolveAcquireTimeoutMs(5_000, { [ACQUIRE_TIMEOUT_ENV_ALIAS]: "777" })).toBe(777);
    expect(resolveAcquireTimeoutMs(5_000, { [ACQUIRE_TIMEOUT_ENV]: "1", [ACQUIRE_TIMEOUT_ENV_ALIAS]: "2" })).toBe(1);
  });

  it("an invalid env value is ignored with a warning instead of becoming NaN", () => {
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    expect(resolveAcquireTimeoutMs(5_000, { [ACQUIRE_TIMEOUT_ENV]: "soon" }, warn)).toBe(5_000);
    expect(resolveAcquireTimeoutMs(undefined, { [ACQUIRE_TIMEOUT_ENV]: "-5" }, warn)).toBe(60_000);
    expect(resolveAcquireTimeoutMs(5_000, { [ACQUIRE_TIMEOUT_ENV]: "x", [ACQUIRE_TIMEOUT_ENV_ALIAS]: "9" }, warn)).toBe(
      9,
    );
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toContain(ACQUIRE_TIMEOUT_ENV);
    expect(warnings[0]).toContain("soon");
  });

  it("is what an acquire uses when no timeout is passed", async () => {
    await startHolder();
    const saved = process.env[ACQUIRE_TIMEOUT_ENV];
    process.env[ACQUIRE_TIMEOUT_ENV] = "700";
    try {
      const clock = fakeClock();
      await expect(acquireSessionWriteLock(lockPath, { clock })).rejects.toThrow("waited 700 ms");
    } finally {
      if (saved === undefined) delete process.env[ACQUIRE_TIMEOUT_ENV];
      else process.env[ACQUIRE_TIMEOUT_ENV] = saved;
    }
  });
});
