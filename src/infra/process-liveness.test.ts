import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import {
  currentProcessIdentity,
  isSameLiveProcess,
  parseProcStatStartTime,
  processLiveness,
  readProcessStartTime,
} from "./process-liveness.js";

const hasProc = fs.existsSync("/proc/self/stat");
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill();
});

/** A real process that stays up until the test ends; resolves once it is running. */
async function liveChild(): Promise<number> {
  const proc = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  children.push(proc);
  await new Promise((resolve) => proc.once("spawn", resolve));
  return proc.pid!;
}

/** The pid of a real process that has already exited. */
async function deadPid(): Promise<number> {
  const proc = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => proc.once("exit", resolve));
  return proc.pid!;
}

describe("process liveness", () => {
  it("a running process recorded with its start time is the same live process", async () => {
    const pid = await liveChild();
    const id = { pid, starttime: readProcessStartTime(pid) ?? null };
    expect(processLiveness(id)).toBe("alive");
    expect(isSameLiveProcess(id)).toBe(true);
  });

  it("a process that has exited is dead", async () => {
    const pid = await deadPid();
    expect(processLiveness({ pid, starttime: "1" })).toBe("dead");
    expect(isSameLiveProcess({ pid })).toBe(false);
  });

  it.runIf(hasProc)("a live pid with a different start time is a recycled pid, not the recorded process", async () => {
    const pid = await liveChild();
    const starttime = readProcessStartTime(pid);
    expect(starttime).toMatch(/^\d+$/);
    expect(processLiveness({ pid, starttime: `${starttime}1` })).toBe("recycled");
    expect(isSameLiveProcess({ pid, starttime: `${starttime}1` })).toBe(false);
  });

  it("without a recorded start time a running pid counts as alive (nothing to compare)", async () => {
    const pid = await liveChild();
    expect(processLiveness({ pid, starttime: null })).toBe("alive");
    expect(processLiveness({ pid })).toBe("alive");
  });

  it("never treats pid 0 or a negative pid (process groups for kill) as a live process", () => {
    expect(processLiveness({ pid: 0 })).toBe("dead");
    expect(processLiveness({ pid: -process.pid })).toBe("dead");
  });

  it("this process is alive under its own identity", () => {
    const self = currentProcessIdentity();
    expect(self.pid).toBe(process.pid);
    expect(isSameLiveProcess(self)).toBe(true);
  });
});

describe("process start time", () => {
  it("reads the start time correctly even when the command name contains spaces and parentheses", () => {
    const rest = Array.from({ length: 50 }, (_, i) => String(i + 3));
    rest[0] = "S";
    const stat = `4242 (evil) name (x) ${rest.join(" ")}\n`;
    expect(parseProcStatStartTime(stat)).toBe("22");
    expect(parseProcStatStartTime("garbage")).toBeUndefined();
    expect(readProcessStartTime(-1)).toBeUndefined();
    if (hasProc) expect(readProcessStartTime(process.pid)).toMatch(/^\d+$/);
  });
});
