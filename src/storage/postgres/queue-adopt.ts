import { nowSql, type Queryable } from "./pool.js";
import { fencePredicate } from "./session-leases.js";

/**
 * Adoption: the lease holder of a session takes the session's queued inputs into its in-memory session queue.
 *
 * "Adopted" and "running" are two states on purpose: an adopted input is still `queued` (it waits in the owner's
 * local queue, where queue modes apply: it may be steered into the running turn or collected), with `node_id` set to
 * the owner; it becomes `running` when its turn starts. A queued row's `node_id` only means something while that node
 * holds the session's lease: a new lease holder adopts every queued row not already its own (the old owner's adoptions
 * are void with its lease), so a dead node's adoptions need no separate cleanup to be picked up.
 */
export interface AdoptedInput {
  runId: string;
  sessionKey: string;
  queueSeq: number;
  acceptedAt: number;
  /** the run's params JSON as accepted */
  params: string;
  /** the session's stored queue mode (sessions.patch), for routing as if the message arrived on this node */
  sessionQueueMode?: string;
  /** the highest stored event seq of the run (its receipt, written by the accepting node): events go on after it */
  lastEventSeq: number;
  /** the receipt stored with the input (JSON), as the accepting node saw the session */
  receipt?: string;
}

type AdoptRow = {
  run_id: string;
  session_key: string;
  queue_seq: number;
  accepted_at: number;
  params: string;
  queue_mode: string | null;
  last_seq: number;
  receipt: string | null;
};

/**
 * Adopts, in acceptance order (`queue_seq`), every queued input of `session` not yet adopted by `nodeId`, while
 * `token` is still the session's lease (else nothing: a stale owner adopts nothing). `FOR UPDATE SKIP LOCKED`: a row
 * another transaction is changing right now is left for the next adoption (that node's NOTIFY or the sweeper) rather
 * than waited for; since only the lease holder adopts, two adopters of one session never both succeed.
 */
export async function adoptQueuedInputs(
  db: Queryable,
  opts: { nodeId: string; session: { key: string; token: number } },
): Promise<AdoptedInput[]> {
  const { rows } = await db.query<AdoptRow>(
    `WITH picked AS (
       SELECT r.run_id FROM runs r
       WHERE r.session_key = $2 AND r.status = 'queued' AND r.node_id IS DISTINCT FROM $1
         AND ${fencePredicate(2, 3)}
       ORDER BY r.queue_seq
       FOR UPDATE OF r SKIP LOCKED
     )
     UPDATE runs SET node_id = $1 FROM picked WHERE runs.run_id = picked.run_id AND runs.status = 'queued'
     RETURNING runs.run_id, runs.session_key, runs.queue_seq, runs.accepted_at, runs.params, runs.receipt,
       (SELECT s.queue_mode FROM sessions s WHERE s.key = runs.session_key) AS queue_mode,
       (SELECT COALESCE(max(e.seq), 0) FROM run_events e WHERE e.run_id = runs.run_id) AS last_seq`,
    [opts.nodeId, opts.session.key, opts.session.token],
  );
  return rows
    .map((r) => ({
      runId: r.run_id,
      sessionKey: r.session_key,
      queueSeq: r.queue_seq,
      acceptedAt: r.accepted_at,
      params: r.params,
      ...(r.queue_mode ? { sessionQueueMode: r.queue_mode } : {}),
      lastEventSeq: Number(r.last_seq),
      ...(r.receipt ? { receipt: r.receipt } : {}),
    }))
    .sort((a, b) => a.queueSeq - b.queueSeq);
}

/**
 * Gives back this node's adopted inputs that have not started (a drain): they become anyone's to adopt again, and
 * keep their place (`queue_seq`). Returns the sessions they belong to, so the other nodes can be told.
 */
export async function unadoptQueuedInputs(db: Queryable, nodeId: string): Promise<string[]> {
  const { rows } = await db.query<{ session_key: string }>(
    "UPDATE runs SET node_id = NULL WHERE node_id = $1 AND status = 'queued' RETURNING session_key",
    [nodeId],
  );
  return [...new Set(rows.map((r) => r.session_key))].sort();
}

/** Whether the session has queued inputs no live lease holder has adopted (the re-check after a release). */
export async function hasUnadoptedInputs(db: Queryable, sessionKey: string): Promise<boolean> {
  const { rowCount } = await db.query(
    "SELECT 1 FROM runs WHERE session_key = $1 AND status = 'queued' AND node_id IS NULL LIMIT 1",
    [sessionKey],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Sessions the sweeper should adopt: they have queued inputs, nobody holds an unexpired lease on them, and no run is
 * `running` in them (a running run without a lease belongs to a dead node: the takeover reports it lost first, so the
 * queue behind it runs only after that). Oldest waiting first, at most `limit`. Reads the partial index of queued rows.
 */
export async function listOrphanedSessions(db: Queryable, opts: { limit: number; now?: number }): Promise<string[]> {
  const { rows } = await db.query<{ session_key: string }>(
    `SELECT r.session_key FROM runs r
     WHERE r.status = 'queued'
       AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_key = r.session_key AND l.expires_at > ${nowSql(2)})
       AND NOT EXISTS (SELECT 1 FROM runs b WHERE b.session_key = r.session_key AND b.status = 'running')
     GROUP BY r.session_key ORDER BY min(r.queue_seq) LIMIT $1`,
    [opts.limit, opts.now ?? null],
  );
  return rows.map((r) => r.session_key);
}
