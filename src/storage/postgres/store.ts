import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { CronJobSpec } from "../../protocol/params.js";
import type { AuditEvent, CronRunInfo } from "../../protocol/payloads.js";
import type { ChatMessage } from "../../providers/types.js";
import { COST_COLUMNS, costColumns, costSumSql, costWhere, toCostRow, toCostTotals } from "../cost-rows.js";
import { type ImageBlobRow, imageRefs, splitImageData, withImageData } from "../image-blobs.js";
import {
  auditFilters,
  cronRunColumns,
  jsonRunColumns,
  type Row,
  runColumns,
  seqRangeWithin,
  sessionColumns,
  type TranscriptRowData,
  toAuditEvent,
  toAuthHealth,
  toCronRun,
  toRun,
  toSession,
  toStoredRunEvent,
  toTranscriptRow,
} from "../row-mapping.js";
import type {
  AuditEventInput,
  AuditQuery,
  AuthHealthRow,
  CompactionEntry,
  CostQuery,
  CostRow,
  CostSumQuery,
  CostTotals,
  CronJobRecord,
  CronRunRecord,
  LedgerBatch,
  OperatorSetting,
  RunEndNotice,
  RunRecord,
  RunStatus,
  RunsEnd,
  SessionDelta,
  SessionListPoint,
  SessionRecord,
  SessionUsageAdd,
  Store,
  StoredRunEvent,
  TranscriptReadOptions,
  TranscriptRow,
} from "../types.js";
import { runEndPointer } from "./end-pointer.js";
import { migratePostgres } from "./migrate.js";
import {
  fitsNotify,
  type NotifierOptions,
  type NotifyPointer,
  notifyChannel,
  PgNotifier,
  sessionChannel,
  sessionChannelSql,
} from "./notifier.js";
import { checkSchemaName, createPostgresPool, type PostgresOptions, type Queryable } from "./pool.js";
import { highestPerRun, runEventPointer } from "./run-follower.js";
import { FENCE_OK, fenceCte, staleFence } from "./session-leases.js";

type RunPatch = Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">>;
type SessionPatch = Partial<Omit<SessionRecord, "key" | "sessionId" | "createdAt">>;
type NewTranscriptRow = Omit<TranscriptRow, "seq" | "generation">;

/** Which lease token this node writes a session under, or undefined when it writes it unfenced. */
export type FenceTokens = (sessionKey: string) => number | undefined;

export interface PostgresStoreOptions extends PostgresOptions {
  /** The shared LISTEN connection's reconnect backoff, clock and error report (see notifier.ts). */
  notifier?: Omit<NotifierOptions, "connection" | "channel">;
}

const UNIQUE_VIOLATION = "23505";
/** runs whose session a node remembers (PostgresStore.runSessions); more are read when updated */
const RUN_SESSIONS_KEPT = 10_000;
/**
 * Appends compute the next seq from the rows committed when their statement starts; two writers on one session at
 * the same moment pick the same seq, and the loser's insert fails on the primary key with nothing written. It then
 * runs again and sees the winner's rows. Every round has a winner, so this bounds the wait for any number of writers
 * a deployment has per session (one, under the session write lock; a few in tests that race on purpose).
 */
const MAX_SEQ_RACES = 64;

/** The run events' insert as a CTE named `ins` (it returns a row per event newly stored); values $1-$8. */
const RUN_EVENTS_INSERT_CTE = `ins AS (
  INSERT INTO run_events (run_id, seq, ts, session_key, stream, event)
  SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[], $6::text[])
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING 1)`;
/** The run events' pointers and the runs' ends ($7 channels, $8 payloads), sent in the order given. */
const RUN_EVENT_NOTICES_SQL =
  "(SELECT count(pg_notify(n.c, n.p)) FROM unnest($7::text[], $8::text[]) AS n(c, p))::int AS notified";

/** The audit rows' insert from `from` on (13 arrays); ORDER BY ord: the identity hands out seqs in the order given. */
function auditInsertSql(from: number): string {
  const $ = (i: number) => `$${from + i}`;
  return `INSERT INTO audit_events (id, ts, actor, action, status, code, session_key, run_id, source_seq, tool_name,
                                 tool_call_fp, schema_version, redaction)
  SELECT id, ts, actor, action, status, code, session_key, run_id, source_seq, tool_name, tool_call_fp,
         schema_version, redaction
  FROM unnest(${$(0)}::text[], ${$(1)}::bigint[], ${$(2)}::text[], ${$(3)}::text[], ${$(4)}::text[], ${$(5)}::text[],
              ${$(6)}::text[], ${$(7)}::text[], ${$(8)}::int[], ${$(9)}::text[], ${$(10)}::text[], ${$(11)}::int[],
              ${$(12)}::text[])
    WITH ORDINALITY AS e(id, ts, actor, action, status, code, session_key, run_id, source_seq, tool_name,
                         tool_call_fp, schema_version, redaction, ord)
  ORDER BY ord`;
}
const AUDIT_INSERT_SQL = auditInsertSql(1);

/** auditInsertSql's values, in its order. */
function auditValues(events: readonly AuditEventInput[]): unknown[] {
  const col = <T>(f: (e: AuditEventInput) => T) => events.map(f);
  return [
    col((e) => e.eventId),
    col((e) => e.occurredAt),
    col((e) => e.actor),
    col((e) => e.action),
    col((e) => e.status),
    col((e) => e.code ?? null),
    col((e) => e.sessionKey),
    col((e) => e.runId),
    col((e) => e.sourceSequence),
    col((e) => e.toolName ?? null),
    col((e) => e.toolCallFingerprint ?? null),
    col((e) => e.schemaVersion),
    col((e) => e.redaction),
  ];
}

/** The cost rows' insert as a CTE named `name` (returning the ids newly stored), its 15 arrays from `from` on. */
function costInsertCte(name: string, from: number): string {
  const $ = (i: number) => `$${from + i}`;
  return `${name} AS (
  INSERT INTO cost_ledger (${COST_COLUMNS})
  SELECT id, ts, run_id, session_key, agent_id, token, provider, model, auth_profile, input_tokens, output_tokens,
         cache_read_tokens, cache_write_tokens, total_tokens, cost_usd
  FROM unnest(${$(0)}::text[], ${$(1)}::bigint[], ${$(2)}::text[], ${$(3)}::text[], ${$(4)}::text[], ${$(5)}::text[],
              ${$(6)}::text[], ${$(7)}::text[], ${$(8)}::text[], ${$(9)}::bigint[], ${$(10)}::bigint[],
              ${$(11)}::bigint[], ${$(12)}::bigint[], ${$(13)}::bigint[], ${$(14)}::float8[])
    WITH ORDINALITY AS r(id, ts, run_id, session_key, agent_id, token, provider, model, auth_profile,
                         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, total_tokens,
                         cost_usd, ord)
  ORDER BY ord
  ON CONFLICT (id) DO NOTHING
  RETURNING id)`;
}

/** The notice of each cost row newly stored (in CTE `name`): channel at `from` + 15, payloads at `from` + 16. */
function costNoticesSql(name: string, from: number): string {
  return `(SELECT count(pg_notify($${from + 15}, n.p)) FROM unnest($${from}::text[], $${from + 16}::text[]) AS n(id, p)
   WHERE n.p IS NOT NULL AND n.id IN (SELECT id FROM ${name}))::int AS cost_notified`;
}

/** appendCostRows: the rows, in the order given, and the notice of each one newly stored. Values $1-$17. */
const COST_INSERT_SQL = `WITH ${costInsertCte("ins", 1)}
SELECT ${costNoticesSql("ins", 1)}`;

/** appendRunEvents: the events and their notices, and how many were newly stored. Values $1-$8. */
const RUN_EVENTS_SQL = `WITH ${RUN_EVENTS_INSERT_CTE}
SELECT (SELECT count(*) FROM ins)::int AS inserted, ${RUN_EVENT_NOTICES_SQL}`;

/**
 * A ledger batch in one statement (PostgresStore.appendLedgerBatch): run events $1-$8, audit rows $9-$21, cost rows
 * $22-$38. Every data-modifying CTE runs to completion whether or not it is read; the select list sends the events'
 * notices before the cost rows' (its subqueries run in order, as the separate statements did).
 */
const LEDGER_BATCH_SQL = `WITH ${RUN_EVENTS_INSERT_CTE},
audit AS (${auditInsertSql(9)}),
${costInsertCte("cost", 22)}
SELECT (SELECT count(*) FROM ins)::int AS inserted, ${RUN_EVENT_NOTICES_SQL}, ${costNoticesSql("cost", 22)}`;

/** readSessionDelta: the session row, and its current generation's rows after $2 oldest first (none: seq null). */
const SESSION_DELTA_SQL = `SELECT row_to_json(s) AS session, t.session_key, t.generation, t.seq, t.kind, t.run_id,
  t.created_at, t.data
FROM sessions s LEFT JOIN transcript t ON t.session_key = s.key AND t.generation = s.generation AND t.seq > $2
WHERE s.key = $1 ORDER BY t.seq`;

/** An append waiting for the one in flight for its session (PostgresStore.appendTranscript). */
interface PendingAppend {
  rows: NewTranscriptRow[];
  /** a turn's end, written in the statement that appends these rows (appendTranscriptAndEnd) */
  end?: RunsEnd;
  resolve: (rows: TranscriptRow[]) => void;
  reject: (err: unknown) => void;
}

/** Patches of one run merged in order (a later field wins, as applying them one after another would do). */
function mergePatches(patches: RunsEnd["patches"]): Map<string, Record<string, unknown>> {
  const merged = new Map<string, Record<string, unknown>>();
  for (const { runId, patch } of patches) merged.set(runId, { ...merged.get(runId), ...patch });
  return merged;
}

/** The JSON `data` column of a transcript row, as SQLite writes it: the message, or the text (and firstKeptSeq). */
function rowData(row: NewTranscriptRow, message: ChatMessage | undefined): string {
  if (message) return JSON.stringify({ message });
  return JSON.stringify(
    row.firstKeptSeq !== undefined ? { text: row.text, firstKeptSeq: row.firstKeptSeq } : { text: row.text },
  );
}

/** `col = $n, ...` for a patch; `values` gets the parameters (numbered from `values.length + 1`). */
function setClause(
  what: string,
  patch: Record<string, unknown>,
  columns: Record<string, string>,
  values: unknown[],
  json?: ReadonlySet<string>,
): string {
  const sets: string[] = [];
  for (const [k, v] of Object.entries(patch)) {
    const col = columns[k];
    if (!col) throw new Error(`${what}: unknown field ${k}`);
    values.push(v === undefined || v === null ? null : json?.has(k) ? JSON.stringify(v) : v);
    sets.push(`${col} = $${values.length}`);
  }
  return sets.join(", ");
}

function isSeqRace(err: unknown): boolean {
  const e = err as { code?: string; table?: string };
  return e?.code === UNIQUE_VIOLATION && e.table === "transcript";
}

/**
 * The Store port on PostgreSQL (SPEC 18): the same tables as SQLite (migrations.ts), the same semantics (every
 * conformance case). Each atomic method is one statement where SQL allows (data-modifying CTEs), else one
 * transaction, so a call costs one round trip in the common case. Transcript seqs are per (session, generation),
 * computed in the inserting statement; see MAX_SEQ_RACES for two writers at once.
 *
 * Several nodes: `setFence` makes a session's writes carry this node's lease token for it (session-leases.ts), so a
 * node that lost the session writes nothing and gets a FencedError. `notifier()` is the node's one LISTEN connection.
 */
export class PostgresStore implements Store {
  readonly kind = "postgres";
  readonly channel: string;
  private fence: FenceTokens | undefined;
  /** the node `running` runs are written for (setRunNode) */
  private runNode: string | undefined;
  private notifierStart: Promise<PgNotifier> | undefined;
  private closed = false;
  /** set by the session relay (announceMessages): the tag its message pointers carry */
  private messagePointerNode: string | undefined;
  /** set by the spend relay (announceCostRows): the notice each cost row stored goes out with */
  private costNotice: ((row: CostRow) => NotifyPointer) | undefined;
  /**
   * The session of each run this node wrote or read and that is not over, so a fenced run update need not read it
   * first (a run's session never changes). Bounded: a run it forgot is read again.
   */
  private readonly runSessions = new Map<string, string>();
  /** runs whose start this node announced (bounded: a forgotten one is announced again, which listeners tolerate) */
  private readonly startedRuns = new Map<string, true>();
  /** per session, the appends that came while one of the session's was in flight: sent next, together, in order */
  private readonly appendsWaiting = new Map<string, PendingAppend[]>();

  constructor(
    readonly pool: pg.Pool,
    readonly schema: string | undefined,
    private readonly opts: PostgresStoreOptions,
  ) {
    this.channel = notifyChannel(schema);
  }

  /**
   * Fences this node's session writes (pg-cluster sets it): while `fn` returns a token for a session, every write of
   * its transcript, its session row, a compaction, a reset and its run records checks that the token is still the
   * session's lease, in the writing statement itself (fenceCte), and fails with FencedError (writing nothing) when
   * it is not.
   * Undefined (the default, one node): writes go straight through.
   */
  setFence(fn: FenceTokens | undefined): void {
    this.fence = fn;
  }

  /**
   * Several nodes: a run this store writes `running` is this node's (`runs.node_id`, set in the same statement), so
   * a queued input that starts at once needs no adoption write of its own (storage/postgres/queue-adopt.ts).
   */
  setRunNode(nodeId: string | undefined): void {
    this.runNode = nodeId;
  }

  /**
   * While set, every transcript append announces its rows to the other nodes in its own statement (`{k: "sm",
   * sessionKey, generation, seq, node}` per row, sent at its commit, on the session's channel: only nodes following
   * the session hear it), so a message costs no NOTIFY transaction of its own. `node` tells the announcing relay's pointers apart (events/pg-session-relay.ts).
   */
  announceMessages(node: string | undefined): void {
    this.messagePointerNode = node;
  }

  /**
   * While set, every cost row stored announces itself to the other nodes in the statement that inserts it
   * (`notice(row)` on the node-level channel, sent at its commit; limits/spend-relay.ts): another node hears of a
   * call when the row it could read is committed, and the notice costs no commit of its own. A row stored already
   * (a repeated write) is not announced again.
   */
  announceCostRows(notice: ((row: CostRow) => NotifyPointer) | undefined): void {
    this.costNotice = notice;
  }

  /** The node's one LISTEN connection on `channel`, started by the first call and stopped by close(). */
  notifier(): Promise<PgNotifier> {
    if (this.closed) return Promise.reject(new Error("postgres store: closed"));
    if (!this.notifierStart) {
      const n = new PgNotifier({ ...this.opts.notifier, connection: this.opts, channel: this.channel });
      const started = n.start().then(() => n);
      // a failed start is not remembered: the next caller tries again
      started.catch(() => {
        if (this.notifierStart === started) this.notifierStart = undefined;
      });
      this.notifierStart = started;
    }
    return this.notifierStart;
  }

  /**
   * The lease tokens this node writes `sessionKeys` under: none (one node, or sessions it holds no token for) means
   * the write goes unfenced. A fenced write is still one statement: it starts with fenceCte(tokens) and gates each of
   * its parts on FENCE_OK; when it wrote nothing, `throwIfFenced` tells a stale token from a write that matched
   * nothing.
   */
  private fenceTokens(sessionKeys: Iterable<string>): Array<[string, number]> {
    const fence = this.fence;
    const tokens: Array<[string, number]> = [];
    if (!fence) return tokens;
    for (const key of new Set(sessionKeys)) {
      const token = fence(key);
      if (token !== undefined) tokens.push([key, token]);
    }
    return tokens;
  }

  /** After a fenced statement that wrote nothing: FencedError when one of its tokens is stale (writing nothing). */
  private async throwIfFenced(tokens: ReadonlyArray<[string, number]>): Promise<void> {
    if (tokens.length === 0) return;
    const err = await staleFence(this.pool, tokens);
    if (err) throw err;
  }

  /** Runs a write that computes transcript seqs again while it loses a seq race (see MAX_SEQ_RACES). */
  private async seqRetry<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!isSeqRace(err) || attempt >= MAX_SEQ_RACES) throw err;
      }
    }
  }

  async getSession(key: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.pool.query("SELECT * FROM sessions WHERE key = $1", [key]);
    return rows[0] ? toSession(rows[0]) : undefined;
  }

  async getSessionById(sessionId: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.pool.query("SELECT * FROM sessions WHERE session_id = $1", [sessionId]);
    return rows[0] ? toSession(rows[0]) : undefined;
  }

  async ensureSession(key: string, agentId: string, now: number): Promise<SessionRecord> {
    // one round trip: the row this statement inserted, or the one already there
    const { rows } = await this.pool.query(
      `WITH ins AS (
         INSERT INTO sessions (key, session_id, agent_id, generation, created_at, updated_at)
         VALUES ($1, $2, $3, 1, $4, $4) ON CONFLICT (key) DO NOTHING RETURNING *)
       SELECT * FROM ins UNION ALL SELECT * FROM sessions WHERE key = $1 LIMIT 1`,
      [key, randomUUID(), agentId, now],
    );
    if (rows[0]) return toSession(rows[0]);
    // another writer inserted it after this statement's snapshot was taken: it is committed now
    const found = await this.getSession(key);
    if (!found) throw new Error(`ensureSession: session ${key} was deleted while it was being created`);
    return found;
  }

  async updateSession(key: string, patch: SessionPatch): Promise<void> {
    const values: unknown[] = [];
    const sets = setClause("updateSession", patch, sessionColumns, values);
    if (!sets) return;
    values.push(key);
    const where = `key = $${values.length}`;
    const tokens = this.fenceTokens([key]);
    if (tokens.length === 0) {
      await this.pool.query(`UPDATE sessions SET ${sets} WHERE ${where}`, values);
      return;
    }
    const { rowCount } = await this.pool.query(
      `WITH ${fenceCte(tokens, values)} UPDATE sessions SET ${sets} WHERE ${where} AND ${FENCE_OK}`,
      values,
    );
    if (!rowCount) await this.throwIfFenced(tokens);
  }

  async listSessions(
    opts: { limit?: number; agentId?: string; after?: SessionListPoint } = {},
  ): Promise<SessionRecord[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    if (opts.agentId) {
      args.push(opts.agentId);
      where.push(`agent_id = $${args.length}`);
    }
    if (opts.after) {
      // the list's own order: newest update first, then by key
      args.push(opts.after.updatedAt, opts.after.key);
      where.push(
        `(updated_at < $${args.length - 1} OR (updated_at = $${args.length - 1} AND key COLLATE "C" > $${args.length}))`,
      );
    }
    args.push(opts.limit ?? 1000);
    const clause = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    // COLLATE "C": keys compare bytewise, as in SQLite, whatever the database's collation
    const { rows } = await this.pool.query(
      `SELECT * FROM sessions ${clause} ORDER BY updated_at DESC, key COLLATE "C" ASC LIMIT $${args.length}`,
      args,
    );
    return rows.map(toSession);
  }

  async countSessions(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>("SELECT count(*) AS n FROM sessions");
    return rows[0].n;
  }

  async deleteSession(key: string): Promise<boolean> {
    // one statement, so all or none; the run events go through the runs table (indexed by session)
    const { rowCount } = await this.pool.query(
      `WITH ev AS (DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM runs WHERE session_key = $1)),
            tr AS (DELETE FROM transcript WHERE session_key = $1),
            bl AS (DELETE FROM blobs WHERE session_key = $1)
       DELETE FROM sessions WHERE key = $1`,
      [key],
    );
    return (rowCount ?? 0) > 0;
  }

  async resetSession(key: string, now: number, reason: string): Promise<number> {
    const data = JSON.stringify({ text: reason });
    const values: unknown[] = [key, now, data];
    const tokens = this.fenceTokens([key]);
    const [fence, gate] = tokens.length > 0 ? [`${fenceCte(tokens, values)}, `, ` AND ${FENCE_OK}`] : ["", ""];
    const sql = `
      WITH ${fence}s AS (SELECT generation FROM sessions WHERE key = $1${gate}),
           marker AS (
             INSERT INTO transcript (session_key, generation, seq, kind, run_id, created_at, data)
             SELECT $1, s.generation,
                    coalesce((SELECT max(seq) FROM transcript WHERE session_key = $1 AND generation = s.generation), 0) + 1,
                    'reset', NULL, $2, $3
             FROM s RETURNING generation)
      UPDATE sessions SET generation = marker.generation + 1, updated_at = $2 FROM marker WHERE key = $1
      RETURNING sessions.generation`;
    const { rows } = await this.seqRetry(() => this.pool.query<{ generation: number }>(sql, values));
    if (!rows[0]) {
      await this.throwIfFenced(tokens);
      throw new Error(`unknown session ${key}`);
    }
    return rows[0].generation;
  }

  /**
   * A session's appends are applied in call order, one statement at a time: one that comes while another of the
   * session's is in flight waits, and every append waiting when it ends goes in the next statement, together (one
   * commit for several messages; concurrent statements would race for the same seqs, and the loser's retry could
   * land after a later message). The first append of a quiet session goes at once, so nothing waits that would not.
   */
  appendTranscript(rows: NewTranscriptRow[]): Promise<TranscriptRow[]> {
    return this.appendQueued(rows, undefined);
  }

  /** The rows and the end in one statement, in its turn among the session's appends (see appendTranscript). */
  async appendTranscriptAndEnd(rows: NewTranscriptRow[], end: RunsEnd): Promise<TranscriptRow[]> {
    if (rows.length === 0) {
      await this.updateRuns(end.patches, end.usage);
      return [];
    }
    return this.appendQueued(rows, end);
  }

  private appendQueued(rows: NewTranscriptRow[], end: RunsEnd | undefined): Promise<TranscriptRow[]> {
    if (rows.length === 0) return Promise.resolve([]);
    const key = rows[0].sessionKey;
    if (rows.some((r) => r.sessionKey !== key)) return this.appendTranscriptNow(rows, end);
    return new Promise((resolve, reject) => {
      const waiting = this.appendsWaiting.get(key);
      const append: PendingAppend = { rows, resolve, reject, ...(end ? { end } : {}) };
      if (waiting) waiting.push(append);
      else {
        this.appendsWaiting.set(key, []);
        void this.appendInTurn(key, [append]);
      }
    });
  }

  private async appendInTurn(key: string, batch: PendingAppend[]): Promise<void> {
    for (;;) {
      // at most one end per statement (each carries its own usage): the appends after it wait for the next one
      const cut = batch.findIndex((b) => b.end !== undefined);
      if (cut >= 0 && cut < batch.length - 1) this.appendsWaiting.get(key)?.unshift(...batch.splice(cut + 1));
      const end = cut >= 0 ? batch[cut].end : undefined;
      try {
        const stored = await this.appendTranscriptNow(
          batch.flatMap((b) => b.rows),
          end,
        );
        let at = 0;
        for (const b of batch) {
          b.resolve(stored.slice(at, at + b.rows.length));
          at += b.rows.length;
        }
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
      const next = this.appendsWaiting.get(key) ?? [];
      if (next.length === 0) {
        this.appendsWaiting.delete(key);
        return;
      }
      batch = next.splice(0);
    }
  }

  private async appendTranscriptNow(rows: NewTranscriptRow[], end?: RunsEnd): Promise<TranscriptRow[]> {
    const keys = new Array<string>(rows.length);
    const kinds = new Array<string>(rows.length);
    const runIds = new Array<string | null>(rows.length);
    const createdAts = new Array<number>(rows.length);
    const datas = new Array<string>(rows.length);
    const blobs = new Map<string, ImageBlobRow & { sessionKey: string; createdAt: number }>();
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      let message = row.message;
      if (message) {
        const split = splitImageData(message);
        message = split.message;
        for (const b of split.blobs) {
          blobs.set(`${row.sessionKey}\n${b.sha256}`, { ...b, sessionKey: row.sessionKey, createdAt: row.createdAt });
        }
      }
      keys[i] = row.sessionKey;
      kinds[i] = row.kind;
      runIds[i] = row.runId ?? null;
      createdAts[i] = row.createdAt;
      datas[i] = rowData(row, message);
    }
    const merged = end ? mergePatches(end.patches) : undefined;
    // an end's runs and usage may name sessions the rows do not: their tokens gate the statement too
    const fenced = merged && this.fence ? await this.sessionsOf(merged.keys(), end?.usage?.sessionKey) : [];
    const tokens = this.fenceTokens([...keys, ...fenced]);
    const runsEnd = merged ? { merged, usage: end?.usage } : undefined;
    const stored = await this.seqRetry(() =>
      this.insertTranscriptRows(tokens, keys, kinds, runIds, createdAts, datas, [...blobs.values()], runsEnd),
    );
    if (merged && stored.length > 0) this.forgetEnded(merged);
    if (stored.length === 0) {
      // every row of a known session is inserted, so nothing inserted means a fenced write that matched nothing
      await this.throwIfFenced(tokens);
      throw new Error(`appendTranscript: no row of session ${keys[0]} was written`);
    }
    // the statement numbered each session's rows in the order given; hand them back in that order
    const next = new Map<string, { generation: number; seq: number }>();
    for (const r of stored) {
      const pos = next.get(r.session_key);
      if (!pos || r.seq < pos.seq) next.set(r.session_key, { generation: r.generation, seq: r.seq });
    }
    return rows.map((row) => {
      const pos = next.get(row.sessionKey);
      if (!pos) throw new Error(`appendTranscript: unknown session ${row.sessionKey}`);
      return { ...row, generation: pos.generation, seq: pos.seq++ };
    });
  }

  /**
   * One statement: each session's rows numbered after its last seq of its current generation, in the order given,
   * and (when there are images) their blobs. A row of an unknown session has no generation, so the NOT NULL
   * constraint fails the whole statement: nothing is written, and the error is reported by session.
   */
  private async insertTranscriptRows(
    tokens: ReadonlyArray<[string, number]>,
    keys: string[],
    kinds: string[],
    runIds: Array<string | null>,
    createdAts: number[],
    datas: string[],
    blobs: Array<ImageBlobRow & { sessionKey: string; createdAt: number }>,
    end?: { merged: Map<string, Record<string, unknown>>; usage: SessionUsageAdd | undefined },
  ): Promise<Array<{ session_key: string; generation: number; seq: number }>> {
    const db = this.pool;
    const args: unknown[] = [keys, kinds, runIds, createdAts, datas];
    // fenced: both inserts gated on the `fence` CTE (its parameters go last, so the numbering below stands)
    const where = tokens.length > 0 ? `WHERE ${FENCE_OK}` : "";
    let blobCte = "";
    if (blobs.length > 0) {
      args.push(
        blobs.map((b) => b.sessionKey),
        blobs.map((b) => b.sha256),
        blobs.map((b) => b.mimeType),
        blobs.map((b) => b.bytes.byteLength),
        blobs.map((b) => b.createdAt),
        blobs.map((b) => b.bytes),
      );
      blobCte = `, bl AS (
        INSERT INTO blobs (session_key, sha256, mime_type, bytes, created_at, data)
        SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::int[], $10::bigint[], $11::bytea[])
        ${where}
        ON CONFLICT (session_key, sha256) DO NOTHING)`;
    }
    // the rows' pointers for the other nodes, sent by this statement (so at its commit) when a relay asked for them
    const announce = this.messagePointerNode;
    let pointers = "";
    if (announce !== undefined) {
      args.push(this.channel, announce);
      const ch = args.length - 1;
      pointers = `, pg_notify(${sessionChannelSql(`$${ch}::text`, "session_key")}, json_build_object('k', 'sm', 'sessionKey', session_key, 'generation', generation,
          'seq', seq, 'node', $${ch + 1}::text)::text) AS notified`;
    }
    // a turn's end: its updates ride this statement, gated on the fence as the inserts are (all or none)
    const endCtes = end
      ? this.runUpdates(end.merged, end.usage, args, tokens.length > 0 ? ` AND ${FENCE_OK}` : "")
          .map((u, i) => `, e${i} AS (${u})`)
          .join("")
      : "";
    const fence = tokens.length > 0 ? `${fenceCte(tokens, args)},` : "";
    const sql = `
      WITH ${fence} r AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
          WITH ORDINALITY AS r(session_key, kind, run_id, created_at, data, ord)),
      pos AS (
        SELECT k.session_key, s.generation,
               coalesce((SELECT max(t.seq) FROM transcript t
                         WHERE t.session_key = k.session_key AND t.generation = s.generation), 0) AS last
        FROM (SELECT DISTINCT session_key FROM r) k LEFT JOIN sessions s ON s.key = k.session_key)${blobCte}
      , ins AS (
      INSERT INTO transcript (session_key, generation, seq, kind, run_id, created_at, data)
      SELECT r.session_key, pos.generation,
             pos.last + row_number() OVER (PARTITION BY r.session_key ORDER BY r.ord), r.kind, r.run_id, r.created_at, r.data
      FROM r JOIN pos ON pos.session_key = r.session_key
      ${where}
      ORDER BY r.ord
      RETURNING session_key, generation, seq)${endCtes}
      SELECT session_key, generation, seq${pointers} FROM ins`;
    try {
      const { rows } = await db.query<{ session_key: string; generation: number; seq: number }>(sql, args);
      return rows;
    } catch (err) {
      const e = err as { code?: string; column?: string; table?: string };
      if (e.code === "23502" && e.table === "transcript" && e.column === "generation") {
        const { rows } = await db.query<{ key: string }>(
          "SELECT k AS key FROM unnest($1::text[]) k WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE key = k) LIMIT 1",
          [keys],
        );
        throw new Error(`appendTranscript: unknown session ${rows[0]?.key ?? keys[0]}`, { cause: err });
      }
      throw err;
    }
  }

  async readTranscript(key: string, opts: TranscriptReadOptions = {}): Promise<TranscriptRow[]> {
    if (opts.maxBytes !== undefined) {
      // the sizes first (octet_length of a TOASTed value reads its header, not the value), then the rows that fit;
      // the second read names the exact seq range, so a row appended in between does not slip in
      const { maxBytes, maxBytesStrict, ...rest } = opts;
      const sizes = await this.sizesOf(key, rest);
      const range = seqRangeWithin(sizes, maxBytes, maxBytesStrict);
      if (!range) return [];
      return this.readTranscript(key, {
        ...rest,
        generation: sizes[0].generation,
        limit: undefined,
        afterSeq: range.oldest - 1,
        beforeSeq: range.newest + 1,
      });
    }
    const [sql, args] = this.transcriptQuery("*", key, opts);
    const { rows } = await this.pool.query(sql, args);
    rows.reverse();
    return this.toTranscriptRows(key, rows, opts.imageData === true);
  }

  async readSessionDelta(key: string, afterSeq: number): Promise<SessionDelta> {
    // One statement, so one round trip and one snapshot: a turn's history load read the session (for its generation)
    // and then the rows after the cached seq, two round trips on the hot path of every turn. The session comes as JSON
    // on every row (a turn's delta is a handful of rows), the rows by the LEFT JOIN (none: one row of nulls).
    const { rows } = await this.pool.query(SESSION_DELTA_SQL, [key, afterSeq]);
    if (rows.length === 0) return { rows: [] };
    const session = toSession(rows[0].session as Row);
    const found = rows[0].seq === null ? [] : rows;
    return { session, rows: await this.toTranscriptRows(key, found, true) };
  }

  async transcriptSizes(key: string, opts: TranscriptReadOptions = {}): Promise<Array<{ seq: number; bytes: number }>> {
    return (await this.sizesOf(key, opts)).map(({ seq, bytes }) => ({ seq, bytes }));
  }

  /** sizes with the generation they were read in (octet_length of a TOASTed value reads its header, not the value) */
  private async sizesOf(
    key: string,
    opts: TranscriptReadOptions,
  ): Promise<Array<{ seq: number; bytes: number; generation: number }>> {
    const [sql, args] = this.transcriptQuery("seq, octet_length(data) AS bytes, generation", key, opts);
    const { rows } = await this.pool.query<{ seq: number; bytes: number | string; generation: number }>(sql, args);
    return rows.map((r) => ({ seq: Number(r.seq), bytes: Number(r.bytes), generation: Number(r.generation) }));
  }

  /** `SELECT <columns>` of the rows the options name (the newest `limit`: an index range scan backwards) */
  private transcriptQuery(columns: string, key: string, opts: TranscriptReadOptions): [string, unknown[]] {
    const args: unknown[] = [key, opts.generation ?? null];
    // without a generation: the session's current one (none for an unknown session, so no rows)
    const where = [
      "session_key = $1",
      "generation = coalesce($2::int, (SELECT generation FROM sessions WHERE key = $1))",
    ];
    if (opts.beforeSeq !== undefined) {
      args.push(opts.beforeSeq);
      where.push(`seq < $${args.length}`);
    }
    if (opts.afterSeq !== undefined) {
      args.push(opts.afterSeq);
      where.push(`seq > $${args.length}`);
    }
    if (opts.kinds?.length) {
      args.push(opts.kinds);
      where.push(`kind = ANY($${args.length}::text[])`);
    }
    args.push(opts.limit ?? null);
    return [
      `SELECT ${columns} FROM transcript WHERE ${where.join(" AND ")} ORDER BY seq DESC LIMIT $${args.length}`,
      args,
    ];
  }

  /** Parses rows; with `imageData`, loads every referenced image of the rows in one more query. */
  private async toTranscriptRows(key: string, rows: Row[], imageData: boolean): Promise<TranscriptRow[]> {
    const datas = rows.map((r) => JSON.parse(r.data as string) as TranscriptRowData);
    if (imageData) {
      const refs = new Set<string>();
      for (const d of datas) if (d.message) for (const ref of imageRefs(d.message)) refs.add(ref);
      if (refs.size > 0) {
        const found = await this.pool.query<{ sha256: string; data: Buffer }>(
          "SELECT sha256, data FROM blobs WHERE session_key = $1 AND sha256 = ANY($2::text[])",
          [key, [...refs]],
        );
        const blobs = new Map(found.rows.map((b) => [b.sha256, b.data]));
        for (const d of datas) if (d.message) d.message = withImageData(d.message, blobs);
      }
    }
    return rows.map((r, i) => toTranscriptRow(r, datas[i]));
  }

  async appendCompaction(key: string, entry: CompactionEntry): Promise<TranscriptRow> {
    if (entry.summary.trim() === "") throw new Error(`appendCompaction: empty summary for session ${key}`);
    const first = entry.firstKeptSeq;
    const data = JSON.stringify({ text: entry.summary, firstKeptSeq: first });
    // One statement: the row after the generation's last one, written only when firstKeptSeq is within it (at most
    // last + 1), and the session's count. No row back: unknown session, or firstKeptSeq out of range (said below),
    // or (fenced) a stale token: the session is not read, so nothing is written.
    const values: unknown[] = [key, entry.runId ?? null, entry.createdAt, data, Number.isInteger(first) ? first : -1];
    const tokens = this.fenceTokens([key]);
    const [fence, gate] = tokens.length > 0 ? [`${fenceCte(tokens, values)}, `, ` AND ${FENCE_OK}`] : ["", ""];
    const sql = `
      WITH ${fence}s AS (
        SELECT key, generation,
               coalesce((SELECT max(seq) FROM transcript WHERE session_key = $1 AND generation = sessions.generation), 0)
                 AS last
        FROM sessions WHERE key = $1${gate}),
      ins AS (
        INSERT INTO transcript (session_key, generation, seq, kind, run_id, created_at, data)
        SELECT $1, s.generation, s.last + 1, 'compaction', $2, $3, $4 FROM s WHERE $5::int BETWEEN 1 AND s.last + 1
        RETURNING generation, seq),
      bump AS (UPDATE sessions SET compaction_count = compaction_count + 1 FROM ins WHERE key = $1)
      SELECT s.last, ins.generation, ins.seq FROM s LEFT JOIN ins ON true`;
    const { rows } = await this.seqRetry(() =>
      this.pool.query<{ last: number; generation: number | null; seq: number | null }>(sql, values),
    );
    const r = rows[0];
    if (!r) {
      await this.throwIfFenced(tokens);
      throw new Error(`appendCompaction: unknown session ${key}`);
    }
    if (r.seq === null || r.generation === null) {
      throw new Error(
        `appendCompaction: firstKeptSeq ${first} of session ${key} must be a row seq from 1 to ${r.last + 1} (the last row is ${r.last})`,
      );
    }
    return {
      sessionKey: key,
      generation: r.generation,
      seq: r.seq,
      kind: "compaction",
      runId: entry.runId,
      createdAt: entry.createdAt,
      text: entry.summary,
      firstKeptSeq: first,
    };
  }

  async readContextRows(key: string, opts: { generation?: number } = {}): Promise<TranscriptRow[]> {
    // One query: the generation's latest compaction row, then its message rows from the compaction's firstKeptSeq
    // (a compaction row without one summarized everything before it), oldest first.
    const { rows } = await this.pool.query(
      `WITH g AS (SELECT coalesce($2::int, (SELECT generation FROM sessions WHERE key = $1)) AS generation),
       c AS (
         SELECT t.* FROM transcript t, g
         WHERE t.session_key = $1 AND t.generation = g.generation AND t.kind = 'compaction'
         ORDER BY t.seq DESC LIMIT 1),
       kept AS (SELECT coalesce((SELECT coalesce((data::jsonb ->> 'firstKeptSeq')::int, seq + 1) FROM c), 1) AS seq)
       SELECT 0 AS part, c.* FROM c
       UNION ALL
       SELECT 1 AS part, t.* FROM transcript t, g, kept
       WHERE t.session_key = $1 AND t.generation = g.generation AND t.kind = 'message' AND t.seq >= kept.seq
       ORDER BY part, seq`,
      [key, opts.generation ?? null],
    );
    return this.toTranscriptRows(key, rows, true);
  }

  private rememberRunSession(runId: string, sessionKey: string): void {
    if (this.runSessions.size >= RUN_SESSIONS_KEPT) {
      // the oldest goes first (a Map iterates in insertion order)
      const oldest = this.runSessions.keys().next().value;
      if (oldest !== undefined) this.runSessions.delete(oldest);
    }
    this.runSessions.set(runId, sessionKey);
  }

  async createRun(run: RunRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO runs (run_id, session_key, status, accepted_at, started_at, ended_at, stop_reason, error, params, result, receipt)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      runValues(run),
    );
    this.rememberRunSession(run.runId, run.sessionKey);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const { rows } = await this.pool.query("SELECT * FROM runs WHERE run_id = $1", [runId]);
    if (!rows[0]) return undefined;
    const run = toRun(rows[0]);
    if (run.status === "queued" || run.status === "running") this.rememberRunSession(run.runId, run.sessionKey);
    return run;
  }

  async readIntake(
    runId: string,
    session: { key: string } | { sessionId: string },
  ): Promise<{ run?: RunRecord; session?: SessionRecord }> {
    // one statement, so one round trip: each row as JSON (BIGINTs arrive as JSON numbers, as the pool parses them)
    const { rows } = await this.pool.query<{
      run: Record<string, unknown> | null;
      session: Record<string, unknown> | null;
    }>(
      `SELECT (SELECT row_to_json(r) FROM runs r WHERE r.run_id = $1) AS run,
              (SELECT row_to_json(s) FROM sessions s WHERE ${"key" in session ? "s.key" : "s.session_id"} = $2) AS session`,
      [runId, "key" in session ? session.key : session.sessionId],
    );
    const { run, session: found } = rows[0];
    if (run) {
      const record = toRun(run);
      if (record.status === "queued" || record.status === "running") this.rememberRunSession(runId, record.sessionKey);
      return { run: record, ...(found ? { session: toSession(found) } : {}) };
    }
    return found ? { session: toSession(found) } : {};
  }

  async updateRun(runId: string, patch: RunPatch): Promise<void> {
    await this.updateRuns([{ runId, patch }]);
  }

  async listRuns(opts: { statuses?: RunStatus[]; sessionKey?: string; limit?: number }): Promise<RunRecord[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    if (opts.statuses?.length) {
      args.push(opts.statuses);
      where.push(`status = ANY($${args.length}::text[])`);
    }
    if (opts.sessionKey) {
      args.push(opts.sessionKey);
      where.push(`session_key = $${args.length}`);
    }
    args.push(opts.limit ?? null);
    // queue_seq: the order records were created in (SQLite's rowid)
    const { rows } = await this.pool.query(
      `SELECT * FROM runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY accepted_at ASC, queue_seq ASC LIMIT $${args.length}`,
      args,
    );
    return rows.map(toRun);
  }

  async listRecentRuns(opts: { limit: number; sessionKey?: string }): Promise<RunRecord[]> {
    const { rows } = opts.sessionKey
      ? await this.pool.query(
          "SELECT * FROM runs WHERE session_key = $1 ORDER BY accepted_at DESC, queue_seq DESC LIMIT $2",
          [opts.sessionKey, opts.limit],
        )
      : await this.pool.query("SELECT * FROM runs ORDER BY accepted_at DESC, queue_seq DESC LIMIT $1", [opts.limit]);
    return rows.map(toRun);
  }

  async pruneRuns(opts: { now: number; maxAgeMs: number; maxCount: number }): Promise<number> {
    // One statement: the finished runs past their age, and of the rest those beyond the newest maxCount (what
    // pruning by age and then by count leaves), with their events.
    const { rowCount } = await this.pool.query(
      `WITH finished AS (
         SELECT run_id, accepted_at, queue_seq, coalesce(ended_at, accepted_at) < $1 AS old
         FROM runs WHERE status NOT IN ('queued', 'running')),
       doomed AS (
         SELECT run_id FROM finished WHERE old
         UNION ALL
         SELECT run_id FROM (
           SELECT run_id, row_number() OVER (ORDER BY accepted_at DESC, queue_seq DESC) AS n
           FROM finished WHERE NOT old) kept
         WHERE n > $2),
       ev AS (DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM doomed))
       DELETE FROM runs WHERE run_id IN (SELECT run_id FROM doomed)`,
      [opts.now - opts.maxAgeMs, Math.max(0, opts.maxCount)],
    );
    return rowCount ?? 0;
  }

  async appendAuditEvents(events: AuditEventInput[], db: Queryable = this.pool): Promise<void> {
    if (events.length === 0) return;
    // one statement; ORDER BY ord makes the identity hand out sequences in the order given
    await db.query(AUDIT_INSERT_SQL, auditValues(events));
  }

  async listAuditEvents(query: AuditQuery): Promise<AuditEvent[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    for (const [field, comparison] of auditFilters) {
      const value = query[field];
      if (value === undefined) continue;
      args.push(value);
      where.push(`${comparison} $${args.length}`);
    }
    args.push(query.limit);
    const clause = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    const { rows } = await this.pool.query(
      `SELECT * FROM audit_events ${clause} ORDER BY seq DESC LIMIT $${args.length}`,
      args,
    );
    return rows.map(toAuditEvent);
  }

  async pruneAuditEvents(opts: { now: number; maxAgeMs: number; maxRows: number }): Promise<number> {
    // the rows past their age, and of the rest everything at or below the (maxRows+1)th newest sequence
    const { rowCount } = await this.pool.query(
      `DELETE FROM audit_events WHERE ts < $1 OR seq <= (
         SELECT seq FROM audit_events WHERE ts >= $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)`,
      [opts.now - opts.maxAgeMs, Math.max(0, opts.maxRows)],
    );
    return rowCount ?? 0;
  }

  async appendCostRows(rows: readonly CostRow[], db: Queryable = this.pool): Promise<void> {
    if (rows.length === 0) return;
    // one statement, in the order given (the identity hands out seqs by ord); each row newly stored sends its notice
    await db.query(COST_INSERT_SQL, this.costValues(rows));
  }

  /** appendCostRows's values: the 15 columns, the node-level channel and each row's notice (null: none). */
  private costValues(rows: readonly CostRow[]): unknown[] {
    const col = (i: number) => rows.map((r) => costColumns(r)[i]);
    // a notice too big for NOTIFY is left out rather than failing the rows (the window sums' sync still finds them)
    const notice = this.costNotice;
    const payloads = rows.map((r) => {
      const p = notice && JSON.stringify(notice(r));
      return p !== undefined && fitsNotify(p) ? p : null;
    });
    return [...Array.from({ length: 15 }, (_, i) => col(i)), this.channel, payloads];
  }

  async listCostRows(
    query: CostQuery & { afterSeq?: number; limit: number },
  ): Promise<Array<CostRow & { seq: number }>> {
    const { clause, args } = costWhere(query, (n) => `$${n}`);
    args.push(query.limit);
    const { rows } = await this.pool.query(
      `SELECT * FROM cost_ledger ${clause} ORDER BY seq ASC LIMIT $${args.length}`,
      args,
    );
    return rows.map(toCostRow);
  }

  async sumCost(query: CostSumQuery): Promise<CostTotals> {
    const { sql, args } = costSumSql(query, (n) => `$${n}`, false);
    const { rows } = await this.pool.query(sql, args);
    return toCostTotals(rows[0]);
  }

  async pruneCostRows(opts: { now: number; maxAgeMs: number; maxRows: number }): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM cost_ledger WHERE ts < $1 OR seq <= (
         SELECT seq FROM cost_ledger WHERE ts >= $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)`,
      [opts.now - opts.maxAgeMs, Math.max(0, opts.maxRows)],
    );
    return rowCount ?? 0;
  }

  async listCronJobs(): Promise<CronJobRecord[]> {
    const { rows } = await this.pool.query(
      `SELECT spec, created_at FROM cron_jobs ORDER BY created_at, id COLLATE "C"`,
    );
    return rows.map((r) => ({ spec: JSON.parse(r.spec as string), createdAt: r.created_at as number }));
  }

  async addCronJob(job: CronJobRecord): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "INSERT INTO cron_jobs (id, spec, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
      [job.spec.id, JSON.stringify(job.spec), job.createdAt],
    );
    return (rowCount ?? 0) > 0;
  }

  async updateCronJob(spec: CronJobSpec): Promise<boolean> {
    const { rowCount } = await this.pool.query("UPDATE cron_jobs SET spec = $1 WHERE id = $2", [
      JSON.stringify(spec),
      spec.id,
    ]);
    return (rowCount ?? 0) > 0;
  }

  async removeCronJob(id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "WITH r AS (DELETE FROM cron_runs WHERE job_id = $1) DELETE FROM cron_jobs WHERE id = $1",
      [id],
    );
    return (rowCount ?? 0) > 0;
  }

  async addCronRun(run: CronRunInfo): Promise<number> {
    const { rows } = await this.pool.query<{ id: number }>(
      `INSERT INTO cron_runs (job_id, scheduled_at, started_at, ended_at, run_id, status, error_kind)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
      [
        run.jobId,
        run.scheduledAt,
        run.startedAt ?? null,
        run.endedAt ?? null,
        run.runId ?? null,
        run.status,
        run.errorKind ?? null,
      ],
    );
    return rows[0].id;
  }

  async updateCronRun(id: number, patch: Partial<Omit<CronRunInfo, "jobId" | "scheduledAt">>): Promise<void> {
    const values: unknown[] = [];
    const sets = setClause("updateCronRun", patch, cronRunColumns, values);
    if (!sets) return;
    values.push(id);
    await this.pool.query(`UPDATE cron_runs SET ${sets} WHERE id = $${values.length}`, values);
  }

  async recentCronRuns(jobIds: readonly string[], limit: number): Promise<Map<string, CronRunRecord[]>> {
    const out = new Map<string, CronRunRecord[]>();
    if (jobIds.length === 0 || limit <= 0) return out;
    // a window per job: one statement for the whole listing, however many jobs
    const { rows } = await this.pool.query(
      `SELECT * FROM (
         SELECT *, row_number() OVER (PARTITION BY job_id ORDER BY scheduled_at DESC, id DESC) AS n
         FROM cron_runs WHERE job_id = ANY($1::text[])) w
       WHERE n <= $2 ORDER BY job_id, n`,
      [[...jobIds], limit],
    );
    for (const r of rows) {
      const run = toCronRun(r);
      const list = out.get(run.jobId);
      if (list) list.push(run);
      else out.set(run.jobId, [run]);
    }
    return out;
  }

  async runningCronRuns(): Promise<CronRunRecord[]> {
    const { rows } = await this.pool.query("SELECT * FROM cron_runs WHERE status = 'running' ORDER BY id");
    return rows.map(toCronRun);
  }

  async pruneCronRuns(keep: number, jobId?: string): Promise<number> {
    const n = Math.max(0, keep);
    if (jobId !== undefined) {
      // one job: its index (job_id, scheduled_at) gives the newest `keep` without reading the other jobs' runs
      const { rowCount } = await this.pool.query(
        `DELETE FROM cron_runs WHERE job_id = $1 AND status <> 'running' AND id NOT IN (
           SELECT id FROM cron_runs WHERE job_id = $1 ORDER BY scheduled_at DESC, id DESC LIMIT $2)`,
        [jobId, n],
      );
      return rowCount ?? 0;
    }
    const { rowCount } = await this.pool.query(
      `DELETE FROM cron_runs WHERE status <> 'running' AND id IN (
         SELECT id FROM (
           SELECT id, row_number() OVER (PARTITION BY job_id ORDER BY scheduled_at DESC, id DESC) AS n FROM cron_runs) w
         WHERE n > $1)`,
      [n],
    );
    return rowCount ?? 0;
  }

  async appendLedgerBatch(batch: LedgerBatch): Promise<{ ignored: number }> {
    if (batch.audit.length === 0 && batch.cost.length === 0)
      return this.appendRunEvents(batch.runEvents, this.pool, batch.runEnds);
    // One statement, so one implicit transaction: the three ledgers' rows, all or none, and the notices at its
    // commit. It was BEGIN, a statement per ledger and COMMIT: up to five round trips on every turn's end, each a
    // socket write and read for the node (bench README, "pg-node-cpu"). The notices go out in the order the
    // separate statements sent them: the events' pointers and the runs' ends, then the cost rows'.
    const { rows } = await this.pool.query<{ inserted: number }>(LEDGER_BATCH_SQL, [
      ...this.runEventValues(batch.runEvents, batch.runEnds ?? []),
      ...auditValues(batch.audit),
      ...this.costValues(batch.cost),
    ]);
    return { ignored: batch.runEvents.length - rows[0].inserted };
  }

  async appendRunEvents(
    events: readonly StoredRunEvent[],
    db: Queryable = this.pool,
    ends: readonly RunEndNotice[] = [],
  ): Promise<{ ignored: number }> {
    if (events.length === 0 && ends.length === 0) return { ignored: 0 };
    const { rows } = await db.query<{ inserted: number }>(RUN_EVENTS_SQL, this.runEventValues(events, ends));
    return { ignored: events.length - rows[0].inserted };
  }

  /** The run events' 6 columns and their notices' channels and payloads ($1-$8 of RUN_EVENTS_INSERT_CTE). */
  private runEventValues(events: readonly StoredRunEvent[], ends: readonly RunEndNotice[]): unknown[] {
    // one pointer per run (its highest seq in the batch) on its session's channel, sent by the same statement, so at
    // its commit; the first batch this node stores of a run also goes to every node ({k: "rs"}): a run started
    const channels: string[] = [];
    const pointers: string[] = [];
    for (const p of highestPerRun(events)) {
      if (!this.startedRuns.has(p.runId)) {
        remember(this.startedRuns, p.runId);
        channels.push(this.channel);
        pointers.push(JSON.stringify({ k: "rs", runId: p.runId, seq: p.seq, sessionKey: p.sessionKey }));
      }
      channels.push(p.sessionKey === undefined ? this.channel : sessionChannel(this.channel, p.sessionKey));
      pointers.push(JSON.stringify(runEventPointer(p.runId, p.seq, p.sessionKey)));
    }
    // runs' end notices last: a listener hears a run's end after the pointers of the events stored with it, and the
    // run record they read on it was committed before the end was handed to the writer (events/pg-bus.ts)
    for (const end of ends) {
      channels.push(this.channel);
      pointers.push(JSON.stringify(runEndPointer(end)));
    }
    return [
      events.map((e) => e.runId),
      events.map((e) => e.seq),
      events.map((e) => e.ts),
      events.map((e) => e.sessionKey),
      events.map((e) => e.stream),
      events.map((e) => e.json),
      channels,
      pointers,
    ];
  }

  async readRunEvents(runId: string, opts: { afterSeq?: number; limit?: number } = {}): Promise<StoredRunEvent[]> {
    const { rows } = await this.pool.query(
      "SELECT run_id, seq, ts, session_key, stream, event FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
      [runId, opts.afterSeq ?? 0, opts.limit ?? null],
    );
    return rows.map(toStoredRunEvent);
  }

  async lastRunEventSeq(runId: string): Promise<number> {
    const { rows } = await this.pool.query<{ m: number | null }>(
      "SELECT max(seq) AS m FROM run_events WHERE run_id = $1",
      [runId],
    );
    return rows[0].m ?? 0;
  }

  async acceptInput(session: { key: string; agentId: string; now: number }, run: RunRecord): Promise<void> {
    // one statement: a repeated run id fails it whole, so the session it would have created is not left behind
    await this.pool.query(
      `WITH s AS (
         INSERT INTO sessions (key, session_id, agent_id, generation, created_at, updated_at)
         VALUES ($12, $13, $14, 1, $15, $15) ON CONFLICT (key) DO NOTHING)
       INSERT INTO runs (run_id, session_key, status, accepted_at, started_at, ended_at, stop_reason, error, params, result, receipt)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [...runValues(run), session.key, randomUUID(), session.agentId, session.now],
    );
    this.rememberRunSession(run.runId, run.sessionKey);
  }

  async updateRuns(patches: ReadonlyArray<{ runId: string; patch: RunPatch }>, usage?: SessionUsageAdd): Promise<void> {
    const merged = mergePatches(patches);
    const tokens = this.fence ? this.fenceTokens(await this.sessionsOf(merged.keys(), usage?.sessionKey)) : [];
    // fenced: each update gated on the `fence` CTE, in the same statement
    const gate = tokens.length > 0 ? ` AND ${FENCE_OK}` : "";
    const values: unknown[] = [];
    const updates = this.runUpdates(merged, usage, values, gate);
    if (updates.length === 0) return;
    // one statement, so all or none: each update a CTE of its own (they touch different rows)
    const ctes = updates.slice(1).map((u, i) => `u${i} AS (${u})`);
    if (tokens.length > 0) ctes.unshift(fenceCte(tokens, values));
    const sql = ctes.length === 0 ? updates[0] : `WITH ${ctes.join(", ")} ${updates[0]}`;
    const { rowCount } = await this.pool.query(sql, values);
    // the first update matched nothing: a stale token, or a run or session that is not there (written as before)
    if (!rowCount) await this.throwIfFenced(tokens);
    this.forgetEnded(merged);
  }

  /** A run that ended is no longer written under its session's lease: its session need not be remembered. */
  private forgetEnded(merged: Map<string, Record<string, unknown>>): void {
    if (!this.fence) return;
    for (const [runId, patch] of merged) {
      if (patch.status !== undefined && patch.status !== "queued" && patch.status !== "running") {
        this.runSessions.delete(runId);
      }
    }
  }

  /** One UPDATE per run (and one for the usage), their parameters pushed onto `values`, each ending with `gate`. */
  private runUpdates(
    merged: Map<string, Record<string, unknown>>,
    usage: SessionUsageAdd | undefined,
    values: unknown[],
    gate: string,
  ): string[] {
    const updates: string[] = [];
    for (const [runId, patch] of merged) {
      let sets = setClause("updateRun", patch, runColumns, values, jsonRunColumns);
      if (!sets) continue;
      // a run starting here is this node's: the adoption rides its `running` write
      if (patch.status === "running" && this.runNode !== undefined) {
        values.push(this.runNode);
        sets += `, node_id = $${values.length}`;
      }
      values.push(runId);
      updates.push(`UPDATE runs SET ${sets} WHERE run_id = $${values.length}${gate}`);
    }
    if (usage) {
      values.push(usage.input, usage.output, usage.total, usage.updatedAt, usage.sessionKey);
      const n = values.length;
      updates.push(
        `UPDATE sessions SET input_tokens = input_tokens + $${n - 4}, output_tokens = output_tokens + $${n - 3},
           total_tokens = total_tokens + $${n - 2}, updated_at = $${n - 1} WHERE key = $${n}${gate}`,
      );
    }
    return updates;
  }

  /** The sessions of `runIds` (and `also`), from what this node remembers, else read (a run's session never changes). */
  private async sessionsOf(runIds: Iterable<string>, also: string | undefined): Promise<Set<string>> {
    const keys = new Set<string>(also !== undefined ? [also] : []);
    const unknown: string[] = [];
    for (const runId of runIds) {
      const key = this.runSessions.get(runId);
      if (key === undefined) unknown.push(runId);
      else keys.add(key);
    }
    if (unknown.length > 0) {
      const { rows } = await this.pool.query<{ session_key: string }>(
        "SELECT DISTINCT session_key FROM runs WHERE run_id = ANY($1::text[])",
        [unknown],
      );
      for (const r of rows) keys.add(r.session_key);
    }
    return keys;
  }

  async listOperatorSettings(prefix: string): Promise<OperatorSetting[]> {
    // starts_with is a range scan of the primary key under the C collation too; LIKE would need the prefix escaped
    const { rows } = await this.pool.query<{ key: string; value: string; updated_at: number }>(
      'SELECT key, value, updated_at FROM operator_settings WHERE starts_with(key, $1) ORDER BY key COLLATE "C"',
      [prefix],
    );
    return rows.map((r) => ({ key: r.key, value: r.value, updatedAt: Number(r.updated_at) }));
  }

  async putOperatorSetting(setting: OperatorSetting): Promise<void> {
    await this.pool.query(
      `INSERT INTO operator_settings (key, value, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      [setting.key, setting.value, setting.updatedAt],
    );
  }

  async listAuthHealth(): Promise<AuthHealthRow[]> {
    const { rows } = await this.pool.query("SELECT * FROM auth_health ORDER BY profile_id, model");
    return rows.map(toAuthHealth);
  }

  async putAuthHealth(row: Omit<AuthHealthRow, "lastUsed">): Promise<void> {
    await this.pool.query(
      `INSERT INTO auth_health (profile_id, model, until, reason, error_count, last_failure_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (profile_id, model) DO UPDATE SET until = excluded.until, reason = excluded.reason,
         error_count = excluded.error_count, last_failure_at = excluded.last_failure_at`,
      [row.profileId, row.model, row.until ?? null, row.reason ?? null, row.errorCount, row.lastFailureAt ?? null],
    );
  }

  async clearAuthHealth(profileId: string, model?: string): Promise<number> {
    const which = model === undefined ? "" : " AND model = $2";
    const { rowCount } = await this.pool.query(
      `UPDATE auth_health SET until = NULL, reason = NULL, error_count = 0, last_failure_at = NULL
       WHERE profile_id = $1${which} AND (until IS NOT NULL OR reason IS NOT NULL OR error_count > 0)`,
      model === undefined ? [profileId] : [profileId, model],
    );
    return rowCount ?? 0;
  }

  async touchAuthProfile(profileId: string, at: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO auth_health (profile_id, model, last_used) VALUES ($1, '', $2)
       ON CONFLICT (profile_id, model) DO UPDATE SET last_used = greatest(auth_health.last_used, excluded.last_used)`,
      [profileId, at],
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const starting = this.notifierStart;
    this.notifierStart = undefined;
    if (starting)
      await starting.then(
        (n) => n.stop(),
        () => {},
      );
    await this.pool.end();
  }
}

function runValues(run: RunRecord): unknown[] {
  return [
    run.runId,
    run.sessionKey,
    run.status,
    run.acceptedAt,
    run.startedAt ?? null,
    run.endedAt ?? null,
    run.stopReason ?? null,
    run.error ?? null,
    JSON.stringify(run.params),
    run.result ? JSON.stringify(run.result) : null,
    run.receipt ? JSON.stringify(run.receipt) : null,
  ];
}

/**
 * Opens the store: the pool, the schema (created when it is named and missing), the migrations (advisory-locked, so
 * several nodes starting at once migrate once). A failure closes what was opened and rejects.
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const pool = createPostgresPool(opts);
  try {
    if (opts.schema) await ensureSchema(pool, checkSchemaName(opts.schema));
    await migratePostgres(pool);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  return new PostgresStore(pool, opts.schema, opts);
}

/** CREATE SCHEMA only when missing: a role allowed to use an existing schema need not be allowed to create one. */
async function ensureSchema(pool: pg.Pool, schema: string): Promise<void> {
  const { rowCount } = await pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
  if (!rowCount) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
}

/** How many run ids `startedRuns` keeps. */
const MAX_STARTED_RUNS = 10_000;

/** Adds `runId`, dropping the oldest past MAX_STARTED_RUNS. */
function remember(runs: Map<string, true>, runId: string): void {
  runs.set(runId, true);
  if (runs.size > MAX_STARTED_RUNS) runs.delete(runs.keys().next().value as string);
}
