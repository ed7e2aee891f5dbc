/**
 * Session ownership (SPEC 3, SPEC 18): whoever holds a session's lock is its one writer of transcript rows. The file
 * lock (session/file-lock.ts) implements it for one machine; a Postgres implementation (an advisory lock or a lease
 * with a fencing token) does for several nodes. Every implementation passes session/lock.conformance.ts.
 *
 * Guarantees:
 * - While a handle is held, no other acquire of the same session key (in this process or another) succeeds.
 * - Not reentrant: a session its owner (this process, this node) already holds is refused at once, since a nested
 *   acquire would wait for itself; in-process order of a session's work is the session queue's job.
 * - Keys are independent: holding one never delays another.
 * - A waiter gets the lock once the holder releases it; past `acquireTimeoutMs` it rejects with an error saying the
 *   session is busy (the file lock's `SessionBusyError`); an aborted `signal` rejects with the signal's reason.
 * - A holder that dies is taken over (the implementation defines how it notices: a dead pid, an expired lease).
 * - `fencingToken` grows with every acquire of the session: a writer holding a smaller token than the session's
 *   newest has lost the lock and must not write. (The file lock's token is a counter of this process; across
 *   processes on one machine the file's exclusive create is the guard.)
 * - `release` is idempotent.
 */
export interface SessionLockPort {
  readonly kind: string;
  acquire(sessionKey: string, opts?: SessionLockOptions): Promise<SessionLockHandle>;
}

export interface SessionLockOptions {
  /** how long to wait for a busy session; default: `session.writeLock.acquireTimeoutMs` (and its env override) */
  acquireTimeoutMs?: number;
  /** how long this hold may last before a waiter may take it over (follows the run timeout); Infinity: no bound */
  maxHoldMs?: number;
  /** aborting stops the wait */
  signal?: AbortSignal;
  /** told once, the first time the session is found held by someone else */
  onWait?: (info: { holderPid?: number }) => void;
}

export interface SessionLockHandle {
  readonly sessionKey: string;
  readonly fencingToken: number;
  /** Idempotent; frees the session only while this handle still holds it. */
  release(): Promise<void>;
}
