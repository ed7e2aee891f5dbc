import { type Clock, systemClock } from "../infra/clock.js";
import type { SessionLockHandle, SessionLockOptions, SessionLockPort } from "../session/lock-port.js";
import { FencedError } from "../storage/postgres/session-leases.js";
import type { SessionOwnership } from "./ownership.js";

/** The same name and code as the file lock's busy error, so the gateway answers both alike (gateway/errors.ts). */
export class SessionBusyError extends Error {
  readonly code = "SESSION_BUSY";
  constructor(
    readonly sessionKey: string,
    readonly waitedMs: number,
    why: string,
  ) {
    super(`session is busy: ${sessionKey} ${why} (waited ${waitedMs} ms)`);
    this.name = "SessionBusyError";
  }
}

/** How often a waiter asks again for a session another node holds. */
export const LOCK_POLL_MS = 50;

/**
 * The SessionLockPort of a node on Postgres: a handle is the session's lease (session/lock-port.ts; the lease row with
 * its fencing token, storage/postgres/session-leases.ts), through the node's ownership.
 *
 * Per-turn lock and per-session ownership are one lease. A turn runs only on the node whose queue adopted its input,
 * and that node already holds the session's lease: the turn's acquire hands out a handle over it at once, with no
 * round trip, and its release keeps the lease (the queue gives it back when the session goes idle). A lock taken
 * where the session is not owned (a reset or delete on another node) takes the lease itself, waits while another
 * node holds it (asking again every LOCK_POLL_MS), and gives it back on release unless the local queue adopted work
 * for the session meanwhile. Not reentrant: one handle per session per node at a time.
 */
export class LeaseSessionLock implements SessionLockPort {
  readonly kind = "postgres-lease";
  private readonly held = new Set<string>();
  private readonly clock: Clock;

  constructor(
    private readonly own: SessionOwnership,
    private readonly opts: {
      acquireTimeoutMs: number;
      clock?: Clock;
      pollMs?: number;
      /** whether the node's beats confirmed its leases recently (false after a pause) */
      confirmed?: () => boolean;
    },
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  async acquire(sessionKey: string, opts: SessionLockOptions = {}): Promise<SessionLockHandle> {
    if (this.held.has(sessionKey)) {
      throw new SessionBusyError(
        sessionKey,
        0,
        "is already held on this node (a nested acquire would wait for itself)",
      );
    }
    // the fast path of every turn: the session is this node's already
    const owned = this.own.lease(sessionKey);
    if (owned) {
      // After a pause (the node's beats did not confirm its leases lately) the lease may be another node's by now:
      // asked once before a turn runs its model and tools again elsewhere. Writes are fenced in any case.
      if (this.opts.confirmed && !this.opts.confirmed()) {
        const holder = await this.own.leases.holder(sessionKey);
        if (holder?.token !== owned.token) throw new FencedError(sessionKey, owned.token);
      }
      return this.grant(sessionKey, owned.token);
    }
    const timeoutMs = opts.acquireTimeoutMs ?? this.opts.acquireTimeoutMs;
    const started = this.clock.now();
    let told = false;
    for (;;) {
      opts.signal?.throwIfAborted();
      const lease = await this.own.serial.run(sessionKey, async () => {
        if (this.held.has(sessionKey)) return undefined;
        const l = await this.own.take(sessionKey);
        // reserved inside the step, so a release step queued behind it cannot give the lease back first
        if (l) this.own.hold(sessionKey);
        return l;
      });
      if (lease) return this.grant(sessionKey, lease.token, true);
      if (!told) {
        told = true;
        opts.onWait?.({});
      }
      const waited = this.clock.now() - started;
      if (waited >= timeoutMs) throw new SessionBusyError(sessionKey, waited, "is held by another gateway node");
      await this.pause(Math.min(this.opts.pollMs ?? LOCK_POLL_MS, timeoutMs - waited), opts.signal);
    }
  }

  private grant(sessionKey: string, token: number, reserved = false): SessionLockHandle {
    this.held.add(sessionKey);
    if (!reserved) this.own.hold(sessionKey);
    let released = false;
    return {
      sessionKey,
      fencingToken: token,
      release: async () => {
        if (released) return;
        released = true;
        this.held.delete(sessionKey);
        this.own.unhold(sessionKey);
        await this.own.serial.run(sessionKey, () => this.own.releaseIfIdle(sessionKey));
      },
    };
  }

  private pause(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.clock.clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = this.clock.setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
