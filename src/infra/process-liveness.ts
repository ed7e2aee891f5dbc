/**
 * The one rule for "is the process that recorded this still the one running": the session write lock uses it to
 * tell a live holder from a stale lock, and run recovery to tell another live process's runs from crash leftovers.
 *
 * A pid alone is not enough, because pids are recycled; the start time from /proc tells a live process apart from
 * a later one that was given the same pid. Where /proc is missing there is no start time, and liveness alone decides.
 *
 * Imports only Node built-ins: the write-lock process tests load it into child processes after a plain transpile.
 */
import fs from "node:fs";

/** Who recorded something: the pid and, where /proc exists, that process's start time. */
export interface ProcessIdentity {
  pid: number;
  starttime?: string | null;
}

export type Liveness = "alive" | "dead" | "recycled";

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); undefined where /proc is unavailable. */
export function readProcessStartTime(pid: number): string | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return parseProcStatStartTime(stat);
}

/** Field 22 of a /proc/<pid>/stat line. */
export function parseProcStatStartTime(stat: string): string | undefined {
  // Field 2 (the command name) is in parentheses and may itself contain spaces and ')', so count fields
  // from the last ')'; what follows starts at field 3.
  const close = stat.lastIndexOf(")");
  if (close < 0) return undefined;
  const fields = stat
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const starttime = fields[22 - 3];
  return starttime !== undefined && /^\d+$/.test(starttime) ? starttime : undefined;
}

/** Whether some process has this pid (not necessarily the one that recorded it). */
export function isPidAlive(pid: number): boolean {
  // pid 0 and negative pids name process groups for kill(), never one process.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else. Anything but ESRCH is treated as alive, because wrongly
    // taking over a live process's lock or runs is far worse than waiting for them.
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** alive: the recorded process still runs; dead: nothing has its pid; recycled: a later process has its pid. */
export function processLiveness(id: ProcessIdentity): Liveness {
  if (!isPidAlive(id.pid)) return "dead";
  if (!id.starttime) return "alive";
  const current = readProcessStartTime(id.pid);
  return current !== undefined && current !== id.starttime ? "recycled" : "alive";
}

export function isSameLiveProcess(id: ProcessIdentity): boolean {
  return processLiveness(id) === "alive";
}

let self: { pid: number; starttime: string | null } | undefined;

/** This process's identity, read once (it cannot change while we run). */
export function currentProcessIdentity(): { pid: number; starttime: string | null } {
  self ??= { pid: process.pid, starttime: readProcessStartTime(process.pid) ?? null };
  return self;
}
