import { createHash } from "node:crypto";
import path from "node:path";
import type { SessionLockHandle, SessionLockOptions, SessionLockPort } from "./lock-port.js";
import { acquireSessionWriteLock, resolveAcquireTimeoutMs, type WriteLockClock } from "./write-lock.js";

export interface FileSessionLockOptions {
  stateDir: string;
  /** `session.writeLock.acquireTimeoutMs` from the config; env overrides it (SPEC 3) */
  acquireTimeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** where an invalid env override is reported */
  warn?: (message: string) => void;
  clock?: WriteLockClock;
  /**
   * How long a session's lock file outlives its last turn in this process, so back-to-back or queued turns of
   * one session create and remove it once instead of per turn (another process waits up to this much longer).
   */
  keepIdleMs?: number;
}

/** Longer than a client's round trip between two turns, short enough that another process barely notices. */
export const DEFAULT_KEEP_IDLE_MS = 50;

/** The lock file of a session: beside the session data, one per session key, named so any key is a safe name. */
export function sessionLockFile(stateDir: string, sessionKey: string): string {
  const safe = sessionKey.replace(/[^A-Za-z0-9_.-]+/g, "_").slice(0, 80);
  const hash = createHash("sha256").update(sessionKey).digest("hex").slice(0, 12);
  return path.join(stateDir, "sessions", `${safe}-${hash}.lock`);
}

/**
 * SessionLockPort on one machine: the process-aware file lock of session/write-lock.ts. The fencing token is a
 * counter of this process (one for every session: it only has to grow); the exclusive file is what keeps other
 * processes out.
 */
export class FileSessionLock implements SessionLockPort {
  readonly kind = "file";
  private tokens = 0;

  constructor(private readonly opts: FileSessionLockOptions) {}

  /** sessionLockFile per key, remembered: a hash and a regex per turn otherwise (bounded like any per-key cache) */
  private readonly paths = new Map<string, string>();

  lockPath(sessionKey: string): string {
    let file = this.paths.get(sessionKey);
    if (file === undefined) {
      if (this.paths.size >= 10_000) this.paths.clear();
      file = sessionLockFile(this.opts.stateDir, sessionKey);
      this.paths.set(sessionKey, file);
    }
    return file;
  }

  async acquire(sessionKey: string, opts: SessionLockOptions = {}): Promise<SessionLockHandle> {
    const file = await acquireSessionWriteLock(this.lockPath(sessionKey), {
      // resolved per acquire, as before: a bad env value is reported where it bites
      acquireTimeoutMs:
        opts.acquireTimeoutMs ?? resolveAcquireTimeoutMs(this.opts.acquireTimeoutMs, this.opts.env, this.opts.warn),
      ...(opts.maxHoldMs !== undefined ? { maxHoldMs: opts.maxHoldMs } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onWait ? { onWait: ({ holderPid }) => opts.onWait?.({ holderPid }) } : {}),
      ...(this.opts.clock ? { clock: this.opts.clock } : {}),
      keepIdleMs: this.opts.keepIdleMs ?? DEFAULT_KEEP_IDLE_MS,
    });
    return { sessionKey, fencingToken: ++this.tokens, release: () => file.release() };
  }
}
