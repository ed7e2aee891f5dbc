import { execFileSync } from "node:child_process";
import fs from "node:fs";

/** A process that has the database file (or its -wal / -shm) open. */
export interface FileHolder {
  pid: number;
  /** its command line, for the message (empty when it cannot be read) */
  command: string;
}

/**
 * Which other processes have the SQLite file of a state dir open: a gateway, an `agent --local`, a `sessions list`
 * at that moment. A gateway leaves no marker in the state dir of its own, but it holds the database open for as long
 * as it serves, and SQLite in WAL mode keeps the -shm file open in every connection, so "has one of the three files
 * open" is the ownership test that cannot go stale (a crashed gateway holds nothing).
 *
 * Linux: read /proc/<pid>/fd (processes of other users are unreadable and so not seen; a gateway runs as the state
 * dir's owner, whose 0700 directory nobody else can open anyway). Elsewhere: `lsof -t`. `undefined` when neither
 * can be asked, so the caller can say the check was not made rather than claim the dir is free.
 */
export function processesHoldingFile(file: string, self = process.pid): FileHolder[] | undefined {
  const targets = new Set<string>();
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      targets.add(fs.realpathSync(f));
    } catch {
      // a file that does not exist is held by nobody
    }
  }
  if (targets.size === 0) return [];
  if (fs.existsSync("/proc/self/fd")) return fromProc(targets, self);
  return fromLsof([...targets], self);
}

function fromProc(targets: Set<string>, self: number): FileHolder[] {
  const holders: FileHolder[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === self) continue;
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // another user's process, or one that just exited
    }
    const holds = fds.some((fd) => {
      try {
        return targets.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
    if (holds) holders.push({ pid, command: commandOf(pid) });
  }
  return holders;
}

function commandOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
  } catch {
    return "";
  }
}

function fromLsof(targets: string[], self: number): FileHolder[] | undefined {
  try {
    const out = execFileSync("lsof", ["-t", "--", ...targets], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return parsePids(out, self);
  } catch (err) {
    // lsof exits 1 when no process has any of the files open; it printed nothing then
    const e = err as { status?: number; stdout?: string; code?: string };
    if (e.code === "ENOENT") return undefined;
    if (e.status === 1) return parsePids(e.stdout ?? "", self);
    return undefined;
  }
}

function parsePids(out: string, self: number): FileHolder[] {
  const pids = new Set(
    out
      .split("\n")
      .map((l) => Number(l.trim()))
      .filter((p) => Number.isInteger(p) && p > 0 && p !== self),
  );
  return [...pids].map((pid) => ({ pid, command: "" }));
}
