import { KeyedSerial } from "../infra/keyed-serial.js";
import type { SessionLease, SessionLeases } from "../storage/postgres/session-leases.js";

/**
 * Which sessions this node owns: "the owner of a session is the node whose in-memory session queue runs it". The
 * node holds the session's lease row (storage/postgres/session-leases.ts) from the moment it adopts the session's
 * first input until the first beat (ClusterIntake.releaseIdle) that finds its local queue with nothing left for it
 * and no lock handle held (a run's, a reset's), not per turn: a session in use costs no lease round trip per message
 * or turn, only one acquire and one release per busy spell and the beat after it.
 * The heartbeat renews every lease of the node in its one statement.
 *
 * The lease's token is the fence of the store's writes for the session (`tokenOf`). A lease another node took (this
 * node paused past its expiry) is `lost`: its stale token stays the fence, so whatever this node still tries to write
 * for the session is refused, until its local work for the session is gone.
 */
export class SessionOwnership {
  private readonly owned = new Map<string, SessionLease>();
  private readonly lost = new Map<string, number>();
  private readonly holds = new Map<string, number>();
  /** every step that changes a session's ownership goes through here, one at a time per session */
  readonly serial = new KeyedSerial();

  constructor(
    readonly leases: SessionLeases,
    /** whether the local queue still has work for the session (its lease must be kept) */
    private readonly busy: (sessionKey: string) => boolean,
  ) {}

  get nodeId(): string {
    return this.leases.nodeId;
  }

  owns(sessionKey: string): boolean {
    return this.owned.has(sessionKey);
  }

  lease(sessionKey: string): SessionLease | undefined {
    return this.owned.get(sessionKey);
  }

  /** The fence for the store's writes: this node's token, a lost lease's stale one, or undefined (not owned). */
  tokenOf(sessionKey: string): number | undefined {
    return this.owned.get(sessionKey)?.token ?? this.lost.get(sessionKey);
  }

  /** how many leases this node holds (sessions and leader roles alike) */
  get ownedCount(): number {
    return this.owned.size;
  }

  ownedKeys(): string[] {
    return [...this.owned.keys()];
  }

  /** The session's lease: the one held, else a new one, else undefined (another node holds it). Call inside `serial`. */
  async take(sessionKey: string): Promise<SessionLease | undefined> {
    const held = this.owned.get(sessionKey);
    if (held) return held;
    const lease = await this.leases.acquire(sessionKey);
    if (lease) this.own(lease);
    return lease;
  }

  /** A lease this node got by other means (a dead node's takeover). */
  own(lease: SessionLease): void {
    this.owned.set(lease.sessionKey, lease);
    this.lost.delete(lease.sessionKey);
  }

  hold(sessionKey: string): void {
    this.holds.set(sessionKey, (this.holds.get(sessionKey) ?? 0) + 1);
  }

  unhold(sessionKey: string): void {
    const n = (this.holds.get(sessionKey) ?? 0) - 1;
    if (n > 0) this.holds.set(sessionKey, n);
    else this.holds.delete(sessionKey);
  }

  /**
   * Gives the lease back when nothing here needs the session any more (no local work, no lock handle). True when it
   * was given back. Call inside `serial`: between the check and the forgetting nothing else runs, so an input that
   * becomes local work after the check finds the session not owned and takes the lease again.
   */
  async releaseIfIdle(sessionKey: string): Promise<boolean> {
    if (this.busy(sessionKey) || this.holds.has(sessionKey)) return false;
    this.lost.delete(sessionKey);
    const lease = this.owned.get(sessionKey);
    if (!lease) return false;
    this.owned.delete(sessionKey);
    await this.leases.release(lease);
    return true;
  }

  /**
   * The leases this node still has in the table, compared with what it thinks it owns: those gone or re-issued to
   * another node are lost (returned), their stale tokens kept as the fence; those it holds but does not own (a
   * release that failed) are given back. `onLost(key)` is called for each lost session at the moment it stops being
   * owned, before anything else can run: a step it queues on `serial` comes before any later take of the session.
   */
  async reconcile(onLost?: (sessionKey: string) => void): Promise<string[]> {
    const current = new Map((await this.leases.listHeld()).map((l) => [l.sessionKey, l.token]));
    for (const [key, token] of current) {
      if (this.owned.has(key)) continue;
      // a lease whose release failed (the database was unreachable): the heartbeat would renew it for ever and the
      // session would be nobody's. Given back, in the session's order (a take in flight is in `owned` by then).
      void this.serial
        .run(key, async () => {
          if (!this.owned.has(key)) await this.leases.release({ sessionKey: key, token });
        })
        .catch(() => {});
    }
    const gone: string[] = [];
    for (const [key, lease] of this.owned) {
      if (current.get(key) === lease.token) continue;
      this.owned.delete(key);
      this.lost.set(key, lease.token);
      gone.push(key);
      onLost?.(key);
    }
    return gone;
  }

  /** Forgets a lost session once its local work is gone (its writes need no fence any more: there are none). */
  forgetLost(sessionKey: string): void {
    if (!this.busy(sessionKey)) this.lost.delete(sessionKey);
  }

  /** Drain: the node's leases are deleted together (the heartbeat's leave); nothing here is owned any more. */
  clear(): void {
    this.owned.clear();
    this.holds.clear();
  }
}
