import { toSession } from "../row-mapping.js";
import type { SessionRecord } from "../types.js";
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
  /** the session's row as this read saw it (a turn launched at once starts from it instead of reading it again) */
  session?: SessionRecord;
}

type AdoptRow = {
  run_id: string;
  session_key: string;
  queue_seq: number;
  accepted_at: number;
  params: string;
  session: Record<string, unknown> | null;
  last_seq: number;
  receipt: string | null;
};

/**
 * The session's queued inputs not adopted by `nodeId`, in acceptance order, while `token` is still the session's
 * lease (else none), without adopting them: a read, no commit. The lease holder feeds them to its local queue and
 * then adopts (`adoptInputs`) those that wait there; one that starts at once is adopted by its `running` write
 * (the store sets `node_id` with it), so an input started where its session is free costs one commit, not two. Only
 * the lease holder reads and writes a session's queued inputs, so what it read stays queued until it writes.
 */
export async function readQueuedInputs(
  db: Queryable,
  opts: { nodeId: string; session: { key: string; token: number } },
): Promise<AdoptedInput[]> {
  const { rows } = await db.query<AdoptRow>(
    `SELECT r.run_id, r.session_key, r.queue_seq, r.accepted_at, r.params, r.receipt,
       (SELECT row_to_json(s) FROM sessions s WHERE s.key = r.session_key) AS session,
       (SELECT COALESCE(max(e.seq), 0) FROM run_events e WHERE e.run_id = r.run_id) AS last_seq
     FROM runs r
     WHERE r.session_key = $2 AND r.status = 'queued' AND r.node_id IS DISTINCT FROM $1
       -- the lease checked without a lock: a row lock would make the read a transaction that flushes WAL, and the
       -- writes that act on what was read are fenced themselves
       AND EXISTS (SELECT 1 FROM session_leases l WHERE l.session_key = $2 AND l.token = $3)
     ORDER BY r.queue_seq`,
    [opts.nodeId, opts.session.key, opts.session.token],
  );
  return rows.map(toAdoptedInput);
}

/**
 * Adopts the given queued inputs of the session for `nodeId` while `token` is still its lease (else none). Returns
 * the run ids adopted.
 */
export async function adoptInputs(
  db: Queryable,
  opts: { nodeId: string; session: { key: string; token: number }; runIds: readonly string[] },
): Promise<string[]> {
  if (opts.runIds.length === 0) return [];
  const { rows } = await db.query<{ run_id: string }>(
    `UPDATE runs r SET node_id = $1
     WHERE r.run_id = ANY($4::text[]) AND r.session_key = $2 AND r.status = 'queued' AND ${fencePredicate(2, 3)}
     RETURNING r.run_id`,
    [opts.nodeId, opts.session.key, opts.session.token, [...opts.runIds]],
  );
  return rows.map((r) => r.run_id);
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

function toAdoptedInput(r: AdoptRow): AdoptedInput {
  const session = r.session ? toSession(r.session) : undefined;
  return {
    runId: r.run_id,
    sessionKey: r.session_key,
    queueSeq: r.queue_seq,
    acceptedAt: r.accepted_at,
    params: r.params,
    ...(session?.queueMode ? { sessionQueueMode: session.queueMode } : {}),
    lastEventSeq: Number(r.last_seq),
    ...(r.receipt ? { receipt: r.receipt } : {}),
    ...(session ? { session } : {}),
  };
}
