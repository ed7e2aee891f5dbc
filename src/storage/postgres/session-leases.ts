import type { Clock } from "../../infra/clock.js";
import { nowSql, type Queryable } from "./pool.js";

/**
 * Which node runs a session, across nodes: a lease row with an expiry and a fencing token (docs/scale-out.md says why
 * a lease and not an advisory lock). A node takes a session's lease before it claims the session's next input, keeps
 * it alive with its heartbeat (`renewAll`), and releases it when the session's queue is empty. A node that stops
 * heartbeating (kill -9, a long pause, a partition) loses its leases `leaseMs` later: another node may then take
 * them, with a larger token. Every write a node makes for a session carries its token (`fencePredicate` or `fenceCte`
 * inside the writing statement, or `checkFence` first in a writing transaction), so a zombie node that wakes up writes
 * nothing.
 */
export interface SessionLease {
  sessionKey: string;
  nodeId: string;
  /** The fencing token: strictly larger for every later lease on any session. */
  token: number;
  expiresAt: number;
}

export const DEFAULT_LEASE_MS = 15_000;

export interface SessionLeaseOptions {
  nodeId: string;
  /** How long a lease lives without a renewal. Default 15000 ms (`storage.postgres.leaseMs`). */
  leaseMs?: number;
  /** Tests pass a ManualClock; without one, the database's clock decides (one clock for every node). */
  clock?: Pick<Clock, "now">;
}

/** A write for a session whose lease this node no longer holds: it must stop and write nothing more. */
export class FencedError extends Error {
  constructor(
    readonly sessionKey: string,
    readonly token: number,
  ) {
    super(`session ${sessionKey}: lease token ${token} is no longer current (another node owns the session now)`);
    this.name = "FencedError";
  }
}

type LeaseRow = { session_key: string; node_id: string; token: number; expires_at: number };
const toLease = (r: LeaseRow): SessionLease => ({
  sessionKey: r.session_key,
  nodeId: r.node_id,
  token: r.token,
  expiresAt: r.expires_at,
});

export class SessionLeases {
  readonly nodeId: string;
  readonly leaseMs: number;
  private readonly clock?: Pick<Clock, "now">;

  constructor(
    private readonly db: Queryable,
    opts: SessionLeaseOptions,
  ) {
    this.nodeId = opts.nodeId;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    if (!Number.isInteger(this.leaseMs) || this.leaseMs <= 0) {
      throw new Error(
        `storage.postgres.leaseMs: expected a positive whole number of milliseconds, got ${opts.leaseMs}`,
      );
    }
    this.clock = opts.clock;
  }

  private now(): number | null {
    return this.clock ? this.clock.now() : null;
  }

  /**
   * Takes the session for this node, or returns undefined while another lease on it (this node's included) is
   * unexpired. One statement: the row's primary key makes two nodes racing for a free session get one winner.
   */
  async acquire(sessionKey: string): Promise<SessionLease | undefined> {
    const { rows } = await this.db.query<LeaseRow>(
      `WITH t AS (SELECT ${nowSql(3)} AS now)
       INSERT INTO session_leases AS l (session_key, node_id, token, acquired_at, expires_at)
       SELECT $1, $2, nextval('lease_tokens'), t.now, t.now + $4 FROM t
       ON CONFLICT (session_key) DO UPDATE
         SET node_id = EXCLUDED.node_id, token = EXCLUDED.token, acquired_at = EXCLUDED.acquired_at,
             expires_at = EXCLUDED.expires_at
         WHERE l.expires_at <= EXCLUDED.acquired_at
       RETURNING l.session_key, l.node_id, l.token, l.expires_at`,
      [sessionKey, this.nodeId, this.now(), this.leaseMs],
    );
    return rows[0] ? toLease(rows[0]) : undefined;
  }

  /** Extends every lease this node still holds (those taken over by another node are not its own any more). */
  async renewAll(): Promise<number> {
    const { rowCount } = await this.db.query(
      `UPDATE session_leases SET expires_at = ${nowSql(2)} + $3 WHERE node_id = $1`,
      [this.nodeId, this.now(), this.leaseMs],
    );
    return rowCount ?? 0;
  }

  /** Gives the session back (its queue is empty, or the node is draining). False when the lease was already lost. */
  async release(lease: Pick<SessionLease, "sessionKey" | "token">): Promise<boolean> {
    const { rowCount } = await this.db.query("DELETE FROM session_leases WHERE session_key = $1 AND token = $2", [
      lease.sessionKey,
      lease.token,
    ]);
    return (rowCount ?? 0) > 0;
  }

  /** The leases the table says this node holds now (a lease another node took is not among them). */
  async listHeld(): Promise<Array<{ sessionKey: string; token: number }>> {
    const { rows } = await this.db.query<{ session_key: string; token: number }>(
      "SELECT session_key, token FROM session_leases WHERE node_id = $1",
      [this.nodeId],
    );
    return rows.map((r) => ({ sessionKey: r.session_key, token: r.token }));
  }

  /** The session's current lease, expired or not (undefined when nobody holds one). */
  async holder(sessionKey: string): Promise<SessionLease | undefined> {
    const { rows } = await this.db.query<LeaseRow>(
      "SELECT session_key, node_id, token, expires_at FROM session_leases WHERE session_key = $1",
      [sessionKey],
    );
    return rows[0] ? toLease(rows[0]) : undefined;
  }
}

/**
 * The fence as a SQL predicate, for a write that is one statement: `... WHERE <pred>` writes nothing once the token is
 * stale. FOR SHARE makes a takeover that is committing at the same moment wait for this write (or this write see the
 * takeover and match nothing): without the lock a statement could pass the check on a snapshot taken just before.
 * The lease is not required to be unexpired: an expired lease nobody took yet still means nobody else ran the session.
 */
export function fencePredicate(sessionKeyParam: number, tokenParam: number): string {
  return `EXISTS (SELECT 1 FROM session_leases WHERE session_key = $${sessionKeyParam} AND token = $${tokenParam} FOR SHARE)`;
}

/**
 * The fence for a transaction of several writes: call it first, on the transaction's client. It locks the lease row
 * (FOR SHARE) until the transaction ends, so no takeover can commit in between; throws FencedError when the token is
 * no longer current.
 */
export async function checkFence(client: Queryable, sessionKey: string, token: number): Promise<void> {
  const { rowCount } = await client.query(
    "SELECT 1 FROM session_leases WHERE session_key = $1 AND token = $2 FOR SHARE",
    [sessionKey, token],
  );
  if (!rowCount) throw new FencedError(sessionKey, token);
}

/**
 * The fence for a write that is one statement of several parts (data-modifying CTEs): a CTE named `fence`, to go first
 * in the statement's WITH list, whose one boolean says whether every token is still its session's lease. Each part
 * that writes adds `AND ${FENCE_OK}` to its WHERE, so a stale token makes the whole statement write nothing, and the
 * statement costs one round trip where BEGIN + checkFence + the write + COMMIT cost four. MATERIALIZED: the check
 * (and its FOR SHARE locks, held to the statement's commit as checkFence holds them to the transaction's) runs once,
 * before the first part that reads it writes anything. `values` gets the keys and tokens as parameters.
 */
export function fenceCte(tokens: ReadonlyArray<readonly [string, number]>, values: unknown[]): string {
  const checks = tokens.map(([key, token]) => {
    values.push(key, token);
    return fencePredicate(values.length - 1, values.length);
  });
  return `fence AS MATERIALIZED (SELECT ${checks.join(" AND ")} AS ok)`;
}

/** The `fence` CTE's verdict, for a write's WHERE (see fenceCte). */
export const FENCE_OK = "(SELECT ok FROM fence)";

/**
 * After a write fenced with fenceCte wrote nothing: the FencedError of a token that is no longer current, or undefined
 * when all still are (the write matched nothing for another reason, e.g. an unknown session). A token never becomes
 * current again once replaced or released (tokens only grow), so reading this after the write is safe.
 */
export async function staleFence(
  db: Queryable,
  tokens: ReadonlyArray<readonly [string, number]>,
): Promise<FencedError | undefined> {
  const { rows } = await db.query<{ k: string; t: string | number }>(
    `SELECT f.k, f.t FROM unnest($1::text[], $2::bigint[]) AS f(k, t)
     WHERE NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_key = f.k AND l.token = f.t) LIMIT 1`,
    [tokens.map(([k]) => k), tokens.map(([, t]) => t)],
  );
  return rows[0] ? new FencedError(rows[0].k, Number(rows[0].t)) : undefined;
}
