import { nowSql, type Queryable } from "./pool.js";
import { fencePredicate } from "./session-leases.js";

/** A queued input a node has taken: its run row is now `running` on that node. */
export interface ClaimedInput {
  runId: string;
  sessionKey: string;
  /** Acceptance order across every node (runs.queue_seq). */
  queueSeq: number;
  acceptedAt: number;
  /** The run's params JSON as accepted. */
  params: string;
}

export interface ClaimOptions {
  nodeId: string;
  /** At most this many inputs, each from a different session. Default 1. */
  limit?: number;
  /** Tests pass a fixed time; without it the database's clock stamps started_at. */
  now?: number;
  /** Claim only in this session, and only while `token` is still its lease (see session-leases.ts). */
  session?: { key: string; token: number };
}

/**
 * Claims the oldest queued input of each session that has no running input, marking it `running` on `nodeId`.
 *
 * `FOR UPDATE SKIP LOCKED`: two nodes claiming at once never take the same row, and neither waits for the other;
 * a session whose head input another claimer has locked is skipped as a whole (only the head of each session is a
 * candidate, never the input behind it), so inputs of one session still run one at a time and in acceptance order.
 * `r.status = 'queued'` is repeated on the locked row on purpose: when a concurrent claim committed after this
 * statement's snapshot, Postgres re-checks the row's new version against it and drops the row.
 */
export async function claimQueuedInputs(db: Queryable, opts: ClaimOptions): Promise<ClaimedInput[]> {
  const limit = opts.limit ?? 1;
  if (!Number.isInteger(limit) || limit < 1)
    throw new Error(`claim limit: expected a positive whole number, got ${limit}`);
  const args: unknown[] = [opts.nodeId, opts.now ?? null, limit];
  let sessionFilter = "";
  let fence = "";
  if (opts.session) {
    args.push(opts.session.key, opts.session.token);
    sessionFilter = "AND session_key = $4";
    fence = `AND ${fencePredicate(4, 5)}`;
  }
  const { rows } = await db.query<{
    run_id: string;
    session_key: string;
    queue_seq: number;
    accepted_at: number;
    params: string;
  }>(
    `WITH heads AS (
       SELECT DISTINCT ON (session_key) run_id FROM runs
       WHERE status = 'queued' ${sessionFilter}
       ORDER BY session_key, queue_seq
     ), picked AS (
       SELECT r.run_id FROM runs r JOIN heads h ON h.run_id = r.run_id
       WHERE r.status = 'queued'
         AND NOT EXISTS (SELECT 1 FROM runs b WHERE b.session_key = r.session_key AND b.status = 'running')
         ${fence}
       ORDER BY r.queue_seq
       LIMIT $3
       FOR UPDATE OF r SKIP LOCKED
     )
     UPDATE runs SET status = 'running', node_id = $1, started_at = ${nowSql(2)}
     FROM picked WHERE runs.run_id = picked.run_id
     RETURNING runs.run_id, runs.session_key, runs.queue_seq, runs.accepted_at, runs.params`,
    args,
  );
  return rows
    .map((r) => ({
      runId: r.run_id,
      sessionKey: r.session_key,
      queueSeq: r.queue_seq,
      acceptedAt: r.accepted_at,
      params: r.params,
    }))
    .sort((a, b) => a.queueSeq - b.queueSeq);
}
