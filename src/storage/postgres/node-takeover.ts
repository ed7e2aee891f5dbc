import type pg from "pg";
import { inTransaction, nowSql, type Queryable } from "./pool.js";
import { checkFence, type SessionLease } from "./session-leases.js";

export const NODE_LOST_ERROR =
  "the gateway node running this run stopped (no heartbeat for a lease); send the message again";

/**
 * A `running` run nobody will finish: its node is not `$self` and is not alive (no row, or silent for longer than a
 * lease), or it has no node at all (a row moved over from a crashed SQLite store, or one its node gave up, see
 * `disownRunsOfLostSessions`). `$self`, `$now` and `$lease` are the statement's parameters of those numbers.
 */
function orphanedRun(alias: string, self: number, now: number, lease: number): string {
  return `${alias}.status = 'running' AND ${alias}.node_id IS DISTINCT FROM $${self}
    AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = ${alias}.node_id AND n.heartbeat_at >= ${nowSql(now)} - $${lease})`;
}

export interface LostRunOptions {
  /** the node looking: its own runs are never another's to end */
  selfId: string;
  leaseMs: number;
  /** tests pass a fixed time; without it the database's clock decides, as it does for the heartbeats */
  now?: number;
}

/**
 * Sessions with a `running` run nobody will finish (see `orphanedRun`). Whoever holds (or can take) such a session's
 * lease ends those runs: a session is never skipped for a lease this node holds itself, and several dead nodes' runs
 * in one session are all found in one pass. Reads the partial index of running rows.
 */
export async function listSessionsWithLostRuns(db: Queryable, opts: LostRunOptions): Promise<string[]> {
  const { rows } = await db.query<{ session_key: string }>(
    `SELECT DISTINCT r.session_key FROM runs r WHERE ${orphanedRun("r", 1, 2, 3)} ORDER BY r.session_key`,
    [opts.selfId, opts.now ?? null, opts.leaseMs],
  );
  return rows.map((r) => r.session_key);
}

/**
 * Marks the session's runs nobody will finish `error` / `node_lost`, under `lease` (this node's: from here on a
 * zombie holding an older token is fenced out), in one fenced transaction; returns their ids. A run whose node came
 * back to life meanwhile is left to it. The run's final result and its lifecycle event are the caller's to write
 * (the queue layer owns their shape); queued inputs need no moving: the lease holder adopts them (`queue-adopt.ts`).
 */
export async function endLostRuns(
  pool: pg.Pool,
  lease: Pick<SessionLease, "sessionKey" | "token">,
  opts: LostRunOptions,
): Promise<string[]> {
  return inTransaction(pool, async (c) => {
    await checkFence(c, lease.sessionKey, lease.token);
    const res = await c.query<{ run_id: string }>(
      `UPDATE runs r SET status = 'error', stop_reason = 'node_lost', error = $5, ended_at = ${nowSql(3)}
       WHERE r.session_key = $4 AND ${orphanedRun("r", 2, 3, 1)} RETURNING r.run_id`,
      [opts.leaseMs, opts.selfId, opts.now ?? null, lease.sessionKey, NODE_LOST_ERROR],
    );
    return res.rows.map((r) => r.run_id).sort();
  });
}

/** Removes the rows of dead nodes none of whose runs is left `running`; returns their ids. */
export async function forgetDeadNodes(db: Queryable, opts: { leaseMs: number; now?: number }): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `DELETE FROM nodes n WHERE n.heartbeat_at < ${nowSql(1)} - $2
       AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.node_id = n.id AND r.status = 'running')
     RETURNING n.id`,
    [opts.now ?? null, opts.leaseMs],
  );
  return rows.map((r) => r.id).sort();
}

/**
 * A node's side of the same rule: its `running` runs in sessions whose lease it no longer holds (another node took
 * it while this one was paused past its lease, or a release went through while a run's end could not be written)
 * are runs it cannot finish: every write it would make for them is fenced. While this node is alive nobody else
 * ends them, so it gives them up (no node) and the session's lease holder ends them on its next beat. A run this
 * node still executes always has this node's lease for its session (the lease is kept while the session has work).
 * Returns the runs given up.
 */
export async function disownRunsOfLostSessions(db: Queryable, nodeId: string): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>(
    `UPDATE runs r SET node_id = NULL
     WHERE r.node_id = $1 AND r.status = 'running'
       AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_key = r.session_key AND l.node_id = $1)
     RETURNING r.run_id`,
    [nodeId],
  );
  return rows.map((r) => r.run_id).sort();
}

/**
 * The same for one session the node has just found lost, whatever lease the node holds by the time this runs: call
 * it before the node can take the session again (a run it starts under a new lease is one it executes). Closes the
 * gap the check above leaves: a node that loses a session and takes it again before its next beat.
 */
export async function disownRunsOfSession(db: Queryable, nodeId: string, sessionKey: string): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>(
    "UPDATE runs SET node_id = NULL WHERE node_id = $1 AND session_key = $2 AND status = 'running' RETURNING run_id",
    [nodeId, sessionKey],
  );
  return rows.map((r) => r.run_id).sort();
}
