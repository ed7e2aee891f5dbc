/**
 * Session write lock (SPEC 3): a lock file beside the session's data that guards transcript writes.
 *
 * The in-process queue already serializes runs of one session; this lock exists for writers that bypass it
 * or live in another process, so it must survive process boundaries (a file created exclusively) and must
 * not outlive its holder (pid liveness, pid recycling, a hold bound, and cleanup on exit and signals).
 *
 * This module deliberately imports only Node built-ins and infra/process-liveness.ts (which does too): the
 * process-level tests load both into child processes after a plain TypeScript transpile, without a bundler.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp, { type FileHandle } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { currentProcessIdentity, processLiveness } from "../infra/process-liveness.js";

export const ACQUIRE_TIMEOUT_ENV = "LOOPGATE_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS";
/** OpenClaw's name, honoured so an OpenClaw user's environment keeps working. */
export const ACQUIRE_TIMEOUT_ENV_ALIAS = "OPENCLAW_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS";
export const DEFAULT_ACQUIRE_TIMEOUT_MS = 60_000;
/** Used only when the caller cannot say how long a run may take. */
export const DEFAULT_MAX_HOLD_MS = 10 * 60_000;
/** Extra time on top of the run timeout, for the bounded cleanup a run does after its abort. */
export const DEFAULT_HOLD_GRACE_MS = 2 * 60_000;
export const DEFAULT_STALE_MALFORMED_MS = 5_000;

const BACKOFF_START_MS = 10;
const BACKOFF_MAX_MS = 250;

export interface WriteLockClock {
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Runs `fn` after `ms` without keeping the process alive (the idle release of a kept lock); returns a cancel.
   * Without it a kept lock is released at once, as if `keepIdleMs` were 0.
   */
  defer?(fn: () => void, ms: number): () => void;
}

export interface WriteLockOptions {
  /** How long to wait for a busy lock; default from `resolveAcquireTimeoutMs()`. */
  acquireTimeoutMs?: number;
  /**
   * Recorded in the lock file so every waiter agrees when this hold has become too long.
   * Callers pass `resolveMaxHoldMs(runTimeoutMs)`; `Infinity` means no bound (unlimited runs).
   */
  maxHoldMs?: number;
  /** Let a nested acquire by this process share the lock (refcounted) instead of failing. */
  allowReentrant?: boolean;
  /** A lock file without a readable payload is stale once its mtime is older than this. */
  staleMalformedMs?: number;
  clock?: WriteLockClock;
  /** Aborting stops the wait; the acquire rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called once, the first time the lock is found held by someone else (so a caller can say what it waits for). */
  onWait?: (info: { holderPid?: number; lockPath: string }) => void;
  /**
   * After the last release, keep the file this long (on the clock's `defer`) so that this process's next acquire
   * of the same path reuses it instead of creating and removing a file per turn. Another process waits that much
   * longer for a session this one just finished with; the process's exit and signal cleanup still removes it.
   */
  keepIdleMs?: number;
}

export interface WriteLockHandle {
  readonly lockPath: string;
  /** Idempotent; removes the file only while it is still this holder's. */
  release(): Promise<void>;
}

export class SessionBusyError extends Error {
  readonly code = "SESSION_BUSY";
  readonly lockPath: string;
  readonly holderPid?: number;
  readonly waitedMs: number;

  constructor(lockPath: string, holderPid: number | undefined, waitedMs: number) {
    const holder = holderPid === undefined ? "an unknown process" : `pid ${holderPid}`;
    super(`session is busy: write lock ${lockPath} held by ${holder} (waited ${waitedMs} ms)`);
    this.name = "SessionBusyError";
    this.lockPath = lockPath;
    this.holderPid = holderPid;
    this.waitedMs = waitedMs;
  }
}

export class ReentrantLockError extends Error {
  readonly code = "SESSION_WRITE_LOCK_REENTRANT";
  readonly lockPath: string;

  constructor(lockPath: string) {
    super(
      `session write lock ${lockPath} is already held by this process; ` +
        "a nested acquire must pass allowReentrant: true",
    );
    this.name = "ReentrantLockError";
    this.lockPath = lockPath;
  }
}

/** What the lock file holds. `starttime` is null where the platform cannot tell (no /proc). */
export interface WriteLockPayload {
  pid: number;
  starttime: string | null;
  createdAt: number;
  /** null = no hold bound. */
  maxHoldMs: number | null;
}

export const systemWriteLockClock: WriteLockClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
  defer: (fn, ms) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

function parseTimeoutValue(raw: string): number | undefined {
  const trimmed = raw.trim();
  // Number("") is 0 and Number("1e3") is 1000; only plain non-negative integers are accepted so a typo never
  // silently turns into "do not wait".
  if (!/^\d+$/.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return Number.isSafeInteger(value) ? value : undefined;
}

function defaultWarn(message: string): void {
  process.emitWarning(message, { code: "LOOPGATE_INVALID_ENV" });
}

/**
 * Env beats config (SPEC 3). An invalid env value is skipped with a warning rather than becoming NaN,
 * which would make every waiter give up at once (or never).
 */
export function resolveAcquireTimeoutMs(
  configValue?: number,
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = defaultWarn,
): number {
  for (const name of [ACQUIRE_TIMEOUT_ENV, ACQUIRE_TIMEOUT_ENV_ALIAS]) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === "") continue;
    const value = parseTimeoutValue(raw);
    if (value !== undefined) return value;
    warn(`ignoring ${name}=${JSON.stringify(raw)}: expected a non-negative integer number of milliseconds`);
  }
  if (configValue !== undefined && Number.isFinite(configValue) && configValue >= 0) return configValue;
  return DEFAULT_ACQUIRE_TIMEOUT_MS;
}

/**
 * The hold bound that follows the run timeout, so a waiter and a holder agree on what "too long" is.
 * A run timeout of 0 means an unlimited run, which therefore has no hold bound either.
 */
export function resolveMaxHoldMs(runTimeoutMs?: number, graceMs = DEFAULT_HOLD_GRACE_MS): number {
  if (runTimeoutMs === undefined || !Number.isFinite(runTimeoutMs) || runTimeoutMs < 0) return DEFAULT_MAX_HOLD_MS;
  if (runTimeoutMs === 0) return Number.POSITIVE_INFINITY;
  return runTimeoutMs + graceMs;
}

function parsePayload(raw: string): WriteLockPayload | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.pid !== "number" || !Number.isInteger(v.pid) || v.pid <= 0) return undefined;
  if (typeof v.createdAt !== "number" || !Number.isFinite(v.createdAt)) return undefined;
  const starttime = typeof v.starttime === "string" ? v.starttime : null;
  let maxHoldMs: number | null;
  if (v.maxHoldMs === null || v.maxHoldMs === undefined) maxHoldMs = null;
  else if (typeof v.maxHoldMs === "number" && Number.isFinite(v.maxHoldMs) && v.maxHoldMs >= 0) {
    maxHoldMs = v.maxHoldMs;
  } else return undefined;
  return { pid: v.pid, starttime, createdAt: v.createdAt, maxHoldMs };
}

function serializePayload(payload: WriteLockPayload): string {
  return `${JSON.stringify(payload)}\n`;
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

interface Observed {
  raw: string;
  ino: number;
  mtimeMs: number;
  payload: WriteLockPayload | undefined;
}

/** Reads content and identity through one descriptor, so both describe the same file. */
async function observe(file: string): Promise<Observed | undefined> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(file, "r");
  } catch (err) {
    if (errnoCode(err) === "ENOENT") return undefined;
    throw err;
  }
  try {
    const st = await fh.stat();
    const raw = await fh.readFile("utf8");
    return { raw, ino: st.ino, mtimeMs: st.mtimeMs, payload: parsePayload(raw) };
  } finally {
    await fh.close();
  }
}

// ---- in-process registry: reentrancy, and cleanup on exit/signals --------------------------------------

interface HeldLock {
  lockPath: string;
  payload: WriteLockPayload;
  refs: number;
  /** Open on the lock file while it may be kept idle: a reuse rewrites the payload through it, never another's file. */
  fd?: number;
  ino?: number;
  /** Set while no handle holds the lock and the file is kept for a next acquire: cancels the idle release. */
  idle?: () => void;
}

const held = new Map<string, HeldLock>();
let handlersInstalled = false;

function onExit(): void {
  releaseAllSync();
}

function onSignal(signal: NodeJS.Signals): void {
  releaseAllSync();
  // Our handler is gone now (the registry is empty). If nobody else listens, Node would otherwise have
  // swallowed the signal just because we listened: re-raise it so the default action (termination with the
  // signal) happens, exactly as it would have without a lock held. Never swallow Ctrl-C.
  if (process.listenerCount(signal) > 0) return;
  try {
    process.kill(process.pid, signal);
  } catch {
    // Fall through to the conventional exit status below.
  }
  process.exit(128 + (os.constants.signals[signal] ?? 0));
}

function syncHandlers(): void {
  if (held.size > 0 && !handlersInstalled) {
    process.on("exit", onExit);
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    handlersInstalled = true;
  } else if (held.size === 0 && handlersInstalled) {
    process.off("exit", onExit);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    handlersInstalled = false;
  }
}

function isOurs(payload: WriteLockPayload | undefined, mine: WriteLockPayload): boolean {
  return payload !== undefined && payload.pid === mine.pid && payload.createdAt === mine.createdAt;
}

/** Exit and signal paths cannot await, so this is the synchronous, best-effort twin of release(). */
function releaseAllSync(): void {
  const entries = [...held.values()];
  held.clear();
  syncHandlers();
  for (const entry of entries) {
    entry.idle?.();
    entry.idle = undefined;
    closeKept(entry);
    const guard = guardPath(entry.lockPath);
    let haveGuard = false;
    try {
      fs.writeFileSync(guard, serializePayload(entry.payload), { flag: "wx" });
      haveGuard = true;
    } catch {
      // Another process is mid-takeover; removing only our own payload below is still correct enough for
      // a process that is about to die, and its dead pid makes any leftover reclaimable at once.
    }
    try {
      if (isOurs(parsePayload(fs.readFileSync(entry.lockPath, "utf8")), entry.payload)) fs.unlinkSync(entry.lockPath);
    } catch {
      // Already gone or unreadable: nothing of ours to remove.
    }
    if (haveGuard) {
      try {
        fs.unlinkSync(guard);
      } catch {
        // Nothing to do while exiting.
      }
    }
  }
}

// ---- the takeover guard ------------------------------------------------------------------------------------

/*
 * Removing a lock file is check-then-act (read it, decide it is stale or ours, unlink it), so two removers
 * could interleave and one would delete the fresh lock the other just created. Every removal therefore
 * happens under a short-lived guard file, created exclusively, and re-checks the file's identity (inode and
 * content) while holding it. Creation of the lock itself needs no guard: `wx` is atomic.
 */
function guardPath(lockPath: string): string {
  return `${lockPath}.takeover`;
}

async function tryTakeGuard(lockPath: string, clock: WriteLockClock, staleMalformedMs: number): Promise<boolean> {
  const guard = guardPath(lockPath);
  const payload: WriteLockPayload = {
    pid: process.pid,
    starttime: currentProcessIdentity().starttime,
    createdAt: clock.now(),
    maxHoldMs: 0,
  };
  try {
    await fsp.writeFile(guard, serializePayload(payload), { flag: "wx" });
    return true;
  } catch (err) {
    if (errnoCode(err) !== "EEXIST") throw err;
  }
  // A guard is held for a few milliseconds; one that lingers belongs to a process that died (or froze)
  // mid-takeover. Clearing it is itself unguarded, which is acceptable: that race needs a crash inside the
  // guard window plus two simultaneous waiters, and the inode re-check below still protects the lock file.
  const seen = await observe(guard);
  if (seen === undefined) return false;
  const holderGone = seen.payload !== undefined && staleHolderReason(seen.payload, undefined) !== undefined;
  if (holderGone || clock.now() - seen.mtimeMs > staleMalformedMs) {
    await fsp.rm(guard, { force: true });
  }
  return false;
}

async function dropGuard(lockPath: string): Promise<void> {
  await fsp.rm(guardPath(lockPath), { force: true });
}

/**
 * Unlinks `lockPath` only if it is still exactly the file we looked at. Returns false when it could not
 * decide now (guard busy) or the file changed, so the caller looks again.
 */
async function removeIfUnchanged(
  lockPath: string,
  seen: Observed,
  clock: WriteLockClock,
  staleMalformedMs: number,
): Promise<boolean> {
  if (!(await tryTakeGuard(lockPath, clock, staleMalformedMs))) return false;
  try {
    const now = await observe(lockPath);
    if (now === undefined) return true;
    if (now.ino !== seen.ino || now.raw !== seen.raw) return false;
    // Under the guard nobody else removes the file, so it cannot be replaced between the check and the
    // removal. The guard itself can be cleared wrongly, though (we froze past staleMalformedMs), so the file
    // is moved aside first and its inode checked again: if it turns out to be someone's fresh lock it is put
    // back (link fails rather than overwrite if yet another lock appeared meanwhile).
    const doomed = `${lockPath}.stale-${process.pid}-${randomUUID()}`;
    await fsp.rename(lockPath, doomed);
    const moved = await fsp.stat(doomed);
    if (moved.ino !== seen.ino) {
      await fsp.link(doomed, lockPath).catch(() => {});
      await fsp.rm(doomed, { force: true });
      return false;
    }
    await fsp.rm(doomed, { force: true });
    return true;
  } finally {
    await dropGuard(lockPath);
  }
}

// ---- staleness -----------------------------------------------------------------------------------------------

/** Why the holder recorded in `payload` can no longer be holding the lock, or undefined if it may be. */
function staleHolderReason(payload: WriteLockPayload, resolvedLockPath: string | undefined): string | undefined {
  if (payload.pid === process.pid) {
    // Our own pid but no live entry for this path: an earlier holder in this process whose cleanup failed,
    // or a previous process that had our pid. Either way nobody is writing.
    if (resolvedLockPath !== undefined && !held.has(resolvedLockPath)) return "held by this process, not registered";
    const own = currentProcessIdentity().starttime;
    if (payload.starttime !== null && own !== null && payload.starttime !== own) {
      return "pid recycled";
    }
    return undefined;
  }
  const liveness = processLiveness(payload);
  if (liveness === "dead") return "holder pid is dead";
  return liveness === "recycled" ? "pid recycled" : undefined;
}

function staleReason(
  seen: Observed,
  resolvedLockPath: string,
  now: number,
  staleMalformedMs: number,
): string | undefined {
  if (seen.payload === undefined) {
    // A holder writes its payload right after creating the file, so a young empty file is normal.
    return now - seen.mtimeMs > staleMalformedMs ? "malformed and old" : undefined;
  }
  const reason = staleHolderReason(seen.payload, resolvedLockPath);
  if (reason !== undefined) return reason;
  if (seen.payload.maxHoldMs !== null && now > seen.payload.createdAt + seen.payload.maxHoldMs) {
    return "held longer than its maxHoldMs";
  }
  return undefined;
}

// ---- acquire / release ---------------------------------------------------------------------------------------

async function tryCreate(
  lockPath: string,
  resolved: string,
  payload: WriteLockPayload,
  keep: boolean,
): Promise<boolean> {
  // Synchronous on purpose: this runs on every turn, and three tiny syscalls cost far less than three thread-pool
  // round trips. No fsync: other processes read the payload through the page cache, and after a machine crash
  // every recorded pid is dead, so the lock is reclaimable whether or not the payload reached the disk.
  let fd: number;
  try {
    fd = fs.openSync(lockPath, "wx");
  } catch (err) {
    if (errnoCode(err) === "EEXIST") return false;
    if (errnoCode(err) !== "ENOENT") throw err;
    // the directory went away since we first made it (state dir wiped): make it again, once
    fs.mkdirSync(path.dirname(lockPath), { recursive: true, mode: 0o700 });
    try {
      fd = fs.openSync(lockPath, "wx");
    } catch (again) {
      if (errnoCode(again) === "EEXIST") return false;
      throw again;
    }
  }
  // Registered before the payload is written: another acquire in this process must already see it as held,
  // and our own staleness check must not mistake the file for an unregistered leftover.
  const entry: HeldLock = { lockPath, payload, refs: 1 };
  held.set(resolved, entry);
  syncHandlers();
  try {
    fs.writeSync(fd, serializePayload(payload));
    if (keep) {
      entry.fd = fd;
      entry.ino = fs.fstatSync(fd).ino;
    } else fs.closeSync(fd);
  } catch (err) {
    try {
      fs.closeSync(fd);
    } catch {
      // already closed
    }
    held.delete(resolved);
    syncHandlers();
    fs.rmSync(lockPath, { force: true });
    throw err;
  }
  return true;
}

/**
 * Fast path of a normal release: under the guard, remove the file if it still holds exactly our payload (pid and
 * createdAt make it unique, so no identity dance is needed for our own file). Returns false when the guard is
 * busy (someone is mid-takeover), and the caller falls back to the careful path.
 */
function removeOwnSync(entry: HeldLock): boolean {
  const guard = guardPath(entry.lockPath);
  try {
    fs.writeFileSync(guard, serializePayload(entry.payload), { flag: "wx" });
  } catch {
    return false;
  }
  try {
    let raw: string;
    try {
      raw = fs.readFileSync(entry.lockPath, "utf8");
    } catch {
      return true; // already gone
    }
    if (isOurs(parsePayload(raw), entry.payload)) fs.unlinkSync(entry.lockPath);
    return true;
  } finally {
    try {
      fs.unlinkSync(guard);
    } catch {
      // removed by a waiter that judged it stale; nothing left to do
    }
  }
}

function makeHandle(
  lockPath: string,
  resolved: string,
  entry: HeldLock,
  clock: WriteLockClock,
  staleMalformedMs: number,
  keepIdleMs: number,
) {
  let released = false;
  const handle: WriteLockHandle = {
    lockPath,
    async release() {
      if (released) return;
      released = true;
      entry.refs -= 1;
      if (entry.refs > 0) return;
      const idleFor = keepIdleFor(entry, clock, keepIdleMs);
      if (idleFor > 0 && clock.defer && entry.fd !== undefined) {
        // Kept for the next turn of this session; released for good once it has stayed idle.
        entry.idle = clock.defer(() => {
          if (entry.idle === undefined) return;
          entry.idle = undefined;
          void releaseFile(resolved, entry, clock, staleMalformedMs).catch(() => {});
        }, idleFor);
        return;
      }
      await releaseFile(resolved, entry, clock, staleMalformedMs);
    },
  };
  return handle;
}

/** Margin kept below the file's hold bound: a kept lock must never look overdue to a waiter in another process. */
const KEEP_MARGIN_MS = 1_000;

/** How long a released lock may stay kept: never to within KEEP_MARGIN_MS of the bound its file records. */
function keepIdleFor(entry: HeldLock, clock: WriteLockClock, keepIdleMs: number): number {
  if (!(keepIdleMs > 0)) return 0;
  if (entry.payload.maxHoldMs === null) return keepIdleMs;
  const left = entry.payload.createdAt + entry.payload.maxHoldMs - KEEP_MARGIN_MS - clock.now();
  return Math.min(keepIdleMs, left);
}

async function releaseFile(
  resolved: string,
  entry: HeldLock,
  clock: WriteLockClock,
  staleMalformedMs: number,
): Promise<void> {
  if (held.get(resolved) === entry) held.delete(resolved);
  syncHandlers();
  closeKept(entry);
  if (!removeOwnSync(entry)) await removeOwn(entry, clock, staleMalformedMs);
}

function closeKept(entry: HeldLock): void {
  if (entry.fd === undefined) return;
  try {
    fs.closeSync(entry.fd);
  } catch {
    // already closed; nothing held by it any more
  }
  entry.fd = undefined;
}

/**
 * A kept (idle) lock taken again by this process: its payload is rewritten through the descriptor with the new
 * hold's start and bound, then the path is checked to still name that file. Returns false, having dropped the
 * entry, when the file is no longer ours (removed or replaced); the caller then acquires as usual.
 */
function reuseKept(resolved: string, entry: HeldLock, payload: WriteLockPayload): boolean {
  entry.idle?.();
  entry.idle = undefined;
  try {
    // the payload is ASCII (JSON of numbers and a decimal starttime), so its length is its size in bytes
    const data = serializePayload(payload);
    fs.writeSync(entry.fd!, data, 0);
    // A shorter payload (a smaller maxHoldMs) would leave the old tail behind; one more syscall only then.
    if (data.length < serializePayload(entry.payload).length) fs.ftruncateSync(entry.fd!, data.length);
    if (fs.statSync(entry.lockPath).ino === entry.ino) {
      entry.payload = payload;
      entry.refs = 1;
      return true;
    }
  } catch {
    // removed under us (the state dir wiped): fall through to a fresh acquire
  }
  closeKept(entry);
  if (held.get(resolved) === entry) held.delete(resolved);
  syncHandlers();
  return false;
}

async function removeOwn(entry: HeldLock, clock: WriteLockClock, staleMalformedMs: number): Promise<void> {
  // Only our own file is removed: after a hold timeout another writer may have taken over, and deleting its
  // lock would let a third writer in beside it.
  for (let attempt = 0; attempt < 200; attempt++) {
    const seen = await observe(entry.lockPath);
    if (seen === undefined || !isOurs(seen.payload, entry.payload)) return;
    if (await removeIfUnchanged(entry.lockPath, seen, clock, staleMalformedMs)) return;
    await clock.sleep(BACKOFF_START_MS);
  }
}

/** Lock directories already created by this process (bounded by the number of session directories: one). */
const knownDirs = new Set<string>();

export async function acquireSessionWriteLock(lockPath: string, opts: WriteLockOptions = {}): Promise<WriteLockHandle> {
  const clock = opts.clock ?? systemWriteLockClock;
  const staleMalformedMs = opts.staleMalformedMs ?? DEFAULT_STALE_MALFORMED_MS;
  const acquireTimeoutMs = opts.acquireTimeoutMs ?? resolveAcquireTimeoutMs();
  const maxHoldMs = opts.maxHoldMs ?? DEFAULT_MAX_HOLD_MS;
  const keepIdleMs = opts.keepIdleMs ?? 0;
  const resolved = path.resolve(lockPath);
  const newPayload = (): WriteLockPayload => ({
    pid: process.pid,
    starttime: currentProcessIdentity().starttime,
    createdAt: clock.now(),
    maxHoldMs: Number.isFinite(maxHoldMs) ? maxHoldMs : null,
  });

  const kept = held.get(resolved);
  if (kept?.idle !== undefined && reuseKept(resolved, kept, newPayload())) {
    return makeHandle(lockPath, resolved, kept, clock, staleMalformedMs, keepIdleMs);
  }
  const existing = held.get(resolved);
  if (existing !== undefined) {
    // Waiting would deadlock: the holder is (typically) our own caller further up the stack.
    if (!opts.allowReentrant) throw new ReentrantLockError(lockPath);
    existing.refs += 1;
    return makeHandle(lockPath, resolved, existing, clock, staleMalformedMs, keepIdleMs);
  }

  const dir = path.dirname(resolved);
  if (!knownDirs.has(dir)) {
    await fsp.mkdir(dir, { recursive: true });
    knownDirs.add(dir);
  }
  const startedAt = clock.now();
  let backoff = BACKOFF_START_MS;
  let lastHolder: number | undefined;
  let waitReported = false;

  for (;;) {
    opts.signal?.throwIfAborted();
    if (await tryCreate(lockPath, resolved, newPayload(), keepIdleMs > 0 && clock.defer !== undefined)) {
      return makeHandle(lockPath, resolved, held.get(resolved)!, clock, staleMalformedMs, keepIdleMs);
    }
    if (held.has(resolved)) {
      // Another task of this process got it while we were waiting. It is a concurrent writer, not our
      // caller, so we queue behind it like any other holder (and never take over from ourselves).
      lastHolder = process.pid;
    } else {
      const seen = await observe(lockPath);
      if (seen === undefined) continue; // released between our create and our read: try again at once
      lastHolder = seen.payload?.pid;
      if (staleReason(seen, resolved, clock.now(), staleMalformedMs) !== undefined) {
        if (await removeIfUnchanged(lockPath, seen, clock, staleMalformedMs)) continue;
      }
    }

    const waited = clock.now() - startedAt;
    if (waited >= acquireTimeoutMs) throw new SessionBusyError(lockPath, lastHolder, waited);
    if (!waitReported) {
      waitReported = true;
      opts.onWait?.({ holderPid: lastHolder, lockPath });
    }
    // Jitter keeps waiters from several processes from retrying in lockstep.
    const delay = Math.min(backoff * (0.5 + Math.random() * 0.5), acquireTimeoutMs - waited);
    await clock.sleep(Math.max(1, Math.round(delay)), opts.signal);
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
  }
}

export async function withSessionWriteLock<T>(
  lockPath: string,
  fn: () => Promise<T> | T,
  opts?: WriteLockOptions,
): Promise<T> {
  const handle = await acquireSessionWriteLock(lockPath, opts);
  try {
    return await fn();
  } finally {
    await handle.release();
  }
}

/** Paths this process holds right now, kept idle ones included (their files exist); for diagnostics. */
export function heldSessionWriteLocks(): string[] {
  return [...held.values()].map((entry) => entry.lockPath);
}

/** Releases now every lock kept idle (a runtime closing, a test's cleanup); held ones stay with their holders. */
export async function releaseIdleSessionWriteLocks(clock: WriteLockClock = systemWriteLockClock): Promise<void> {
  for (const [resolved, entry] of [...held]) {
    if (entry.idle === undefined) continue;
    entry.idle();
    entry.idle = undefined;
    await releaseFile(resolved, entry, clock, DEFAULT_STALE_MALFORMED_MS);
  }
}
