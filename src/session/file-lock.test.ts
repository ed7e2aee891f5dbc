import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileSessionLock } from "./file-lock.js";
import { sessionLockConformance } from "./lock.conformance.js";
import { releaseIdleSessionWriteLocks, systemWriteLockClock, type WriteLockClock } from "./write-lock.js";

// The file lock's owner is the process: a second owner needs a second process, which write-lock.test.ts and
// test/e2e/two-process-lock.test.ts start for real; here the one-owner cases run.
sessionLockConformance(
  "file lock",
  async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-lock-"));
    return {
      locks: new FileSessionLock({ stateDir }),
      close: async () => {
        await releaseIdleSessionWriteLocks();
        fs.rmSync(stateDir, { recursive: true, force: true });
      },
    };
  },
  { hasPeer: false },
);

/** The real clock, except that the idle release runs only when the test says so. */
function manualIdleClock(): WriteLockClock & { fireIdle(): void; pending(): number[] } {
  const timers: Array<{ fn: () => void; ms: number; live: boolean }> = [];
  return {
    now: systemWriteLockClock.now,
    sleep: systemWriteLockClock.sleep,
    defer(fn, ms) {
      const t = { fn, ms, live: true };
      timers.push(t);
      return () => {
        t.live = false;
      };
    },
    fireIdle() {
      for (const t of timers.splice(0)) if (t.live) t.fn();
    },
    pending: () => timers.filter((t) => t.live).map((t) => t.ms),
  };
}

describe("file lock kept between turns", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await releaseIdleSessionWriteLocks();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const stateDir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), "lg-lock-keep-"));
    dirs.push(d);
    return d;
  };

  it("back-to-back turns of one session create the lock file once and remove it after the idle delay", async () => {
    const clock = manualIdleClock();
    const locks = new FileSessionLock({ stateDir: stateDir(), clock, keepIdleMs: 50 });
    const file = locks.lockPath("agent:main:one");
    const inodes: number[] = [];
    for (let turn = 0; turn < 3; turn++) {
      const h = await locks.acquire("agent:main:one", { acquireTimeoutMs: 0, maxHoldMs: 60_000 + turn });
      inodes.push(fs.statSync(file).ino);
      // the file says when this hold began and how long it may last, for waiters in other processes
      const payload = JSON.parse(fs.readFileSync(file, "utf8"));
      expect(payload).toMatchObject({ pid: process.pid, maxHoldMs: 60_000 + turn });
      await h.release();
      expect(clock.pending()).toEqual([50]);
    }
    expect(new Set(inodes).size).toBe(1);
    expect(fs.existsSync(file)).toBe(true);
    clock.fireIdle();
    expect(fs.existsSync(file)).toBe(false);
  });

  it("a shorter hold bound on the next turn leaves a payload a waiter can read", async () => {
    const clock = manualIdleClock();
    const locks = new FileSessionLock({ stateDir: stateDir(), clock, keepIdleMs: 50 });
    const file = locks.lockPath("agent:main:one");
    await (await locks.acquire("agent:main:one", { maxHoldMs: 1_000_000 })).release();
    const h = await locks.acquire("agent:main:one", { maxHoldMs: 5_000 });
    expect(JSON.parse(fs.readFileSync(file, "utf8")).maxHoldMs).toBe(5_000);
    await h.release();
  });

  it("a kept lock whose file was removed meanwhile is made again on the next turn", async () => {
    const clock = manualIdleClock();
    const dir = stateDir();
    const locks = new FileSessionLock({ stateDir: dir, clock, keepIdleMs: 50 });
    const file = locks.lockPath("agent:main:one");
    await (await locks.acquire("agent:main:one")).release();
    fs.rmSync(file);
    const h = await locks.acquire("agent:main:one", { acquireTimeoutMs: 0 });
    expect(JSON.parse(fs.readFileSync(file, "utf8")).pid).toBe(process.pid);
    await h.release();
  });

  it("with no idle delay the file goes at each release, as before", async () => {
    const locks = new FileSessionLock({ stateDir: stateDir(), keepIdleMs: 0 });
    const h = await locks.acquire("agent:main:one");
    await h.release();
    expect(fs.existsSync(locks.lockPath("agent:main:one"))).toBe(false);
  });
});
