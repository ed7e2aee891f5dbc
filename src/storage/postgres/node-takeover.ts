import type pg from "pg";
import { inTransaction, nowSql } from "./pool.js";
import { checkFence, type SessionLease, type SessionLeases } from "./session-leases.js";

export const NODE_LOST_ERROR =
  "the gateway node running this run stopped (no heartbeat for a lease); send the message again";

/** One session of a dead node, now this node's: the runs that were failed, and the lease to go on under. */
export interface TakenSession {
  sessionKey: string;
  lease: SessionLease;
  /** Runs the dead node had running in the session, now `error` with stop reason `node_lost`. */
  lostRunIds: string[];
}

/**
 * Takes over what a dead node (see `listDeadNodes`) was running: for each session with a run `running` on it, this
 * node takes the session's lease first (a new, larger token: from here on the dead node, should it wake up, is fenced
 * out), then marks those runs `error` / `node_lost` in a transaction fenced by that token. Queued inputs need no
 * moving: they are not bound to a node, and the new lease holder adopts them next, in order (`queue-adopt.ts`).
 *
 * A session whose lease another live node holds is left to that node. The dead node's row is removed once none of
 * its runs is left running. The run's final result and its lifecycle event are the caller's to write (the queue
 * layer owns their shape).
 */
export async function takeOverDeadNode(
  pool: pg.Pool,
  leases: SessionLeases,
  deadNodeId: string,
  opts: { now?: number } = {},
): Promise<TakenSession[]> {
  const { rows } = await pool.query<{ session_key: string }>(
    "SELECT DISTINCT session_key FROM runs WHERE node_id = $1 AND status = 'running' ORDER BY session_key",
    [deadNodeId],
  );
  const taken: TakenSession[] = [];
  for (const { session_key: sessionKey } of rows) {
    const lease = await leases.acquire(sessionKey);
    if (!lease) continue;
    const lostRunIds = await inTransaction(pool, async (c) => {
      await checkFence(c, sessionKey, lease.token);
      const res = await c.query<{ run_id: string }>(
        `UPDATE runs SET status = 'error', stop_reason = 'node_lost', error = $3, ended_at = ${nowSql(4)}
         WHERE session_key = $1 AND node_id = $2 AND status = 'running' RETURNING run_id`,
        [sessionKey, deadNodeId, NODE_LOST_ERROR, opts.now ?? null],
      );
      return res.rows.map((r) => r.run_id).sort();
    });
    taken.push({ sessionKey, lease, lostRunIds });
  }
  await pool.query(
    "DELETE FROM nodes WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM runs WHERE node_id = $1 AND status = 'running')",
    [deadNodeId],
  );
  return taken;
}
