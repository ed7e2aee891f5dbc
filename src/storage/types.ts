import type { CronJobSpec } from "../protocol/params.js";
import type { AuditAction, AuditEvent, AuditStatus, CronRunInfo } from "../protocol/payloads.js";
import type { ChatMessage } from "../providers/types.js";
import type { StorageFault } from "./storage-fault.js";

/**
 * The storage port. Every data method answers with a promise: SQLite (embedded, WAL; storage/sqlite-adapter.ts)
 * does its work synchronously when called and hands back a settled promise, a server backend (Postgres, SPEC 18)
 * answers after its round trip. Writes that must happen together are single purpose-named methods (acceptInput,
 * updateRuns, appendCompaction, resetSession, ...), each all-or-none, so no caller holds a transaction across awaits.
 * Every implementation passes storage/store.conformance.ts.
 */

/** Where a session listing stopped: the last session it returned. */
export interface SessionListPoint {
  updatedAt: number;
  key: string;
}

export interface SessionRecord {
  key: string;
  sessionId: string;
  agentId: string;
  /** transcript generation; /new and /reset start the next one, the old rows are kept */
  generation: number;
  createdAt: number;
  updatedAt: number;
  label?: string;
  modelOverride?: string;
  thinking?: string;
  queueMode?: string;
  /** inline tool summaries for this session's runs (sessions.patch verboseLevel); unset: the agent's default */
  verboseLevel?: string;
  /** what this session's runs show of the model's reasoning (sessions.patch reasoningLevel); unset: the default */
  reasoningLevel?: string;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  compactionCount: number;
  /** JSON of the skills snapshot the session reuses between runs */
  skillsSnapshot?: string;
  /** the auth profile the session's runs are pinned to (cache locality); moves on reset, compaction or a cooldown */
  authProfile?: string;
  /** the user's pin (sessions.patch authProfile): kept across resets, preferred whenever it is usable */
  authProfileOverride?: string;
}

/**
 * The stored health of one auth profile (SPEC 23), shared by every node: `model` is the model a rate limit cooled
 * (the profile stays usable for its other models), or "" for what holds for the whole profile (billing and
 * permanent auth failures, and when the profile was last used).
 */
/**
 * One setting operators change at run time that every gateway node must see (exec allow-always answers and allowlist
 * patterns, skill and plugin switches): a dotted key (`exec.allowAlways.<agent>.<hash>…`, `skills.<name>`), its value
 * as JSON text, and when it was last written.
 */
export interface OperatorSetting {
  key: string;
  value: string;
  updatedAt: number;
}

export interface AuthHealthRow {
  profileId: string;
  model: string;
  /** cooling down (a model row) or disabled (the "" row) until this time; absent: usable */
  until?: number;
  /** why: a provider error kind (rate_limit, billing, auth) */
  reason?: string;
  /** failures since the last success (or since failureWindowHours passed without one): the ladder's step */
  errorCount: number;
  lastFailureAt?: number;
  /** the last successful call ("" rows only); written at most once a minute per profile */
  lastUsed?: number;
}

export type TranscriptKind = "message" | "compaction" | "reset";

export interface TranscriptRow {
  sessionKey: string;
  generation: number;
  seq: number;
  kind: TranscriptKind;
  runId?: string;
  createdAt: number;
  message?: ChatMessage;
  /** compaction summary / reset reason */
  text?: string;
  /** compaction rows: seq of the first message row the summary does not cover (kept verbatim after it) */
  firstKeptSeq?: number;
}

export interface TranscriptReadOptions {
  generation?: number;
  limit?: number;
  beforeSeq?: number;
  afterSeq?: number;
  kinds?: TranscriptKind[];
  /** load each image's bytes back into `data` (the model's history); clients get the references only */
  imageData?: boolean;
  /**
   * Stop before an older row would bring the rows' stored size (their JSON, images apart) past this many bytes; the
   * newest row that matches always comes. The sizes are read first, so big rows that do not fit are never loaded.
   */
  maxBytes?: number;
  /** with `maxBytes`: the newest row too is left out when it alone passes maxBytes (a page that has rows already) */
  maxBytesStrict?: boolean;
}

/** `Store.readSessionDelta`: no session, no rows. */
export interface SessionDelta {
  session?: SessionRecord;
  rows: TranscriptRow[];
}

export interface CompactionEntry {
  summary: string;
  /** seq of the first message row kept verbatim; at most the last seq + 1 (nothing kept) */
  firstKeptSeq: number;
  runId?: string;
  createdAt: number;
}

export type RunStatus = "queued" | "running" | "ok" | "error" | "timeout" | "aborted";

export interface RunRecord {
  runId: string;
  sessionKey: string;
  status: RunStatus;
  acceptedAt: number;
  startedAt?: number;
  endedAt?: number;
  stopReason?: string;
  error?: string;
  /** the accepted input and run options, stored before the RPC answers */
  params: Record<string, unknown>;
  /** final result payload (payloads, meta) once finished */
  result?: Record<string, unknown>;
  /** how the input was handled: started, queued, steered, collected, dropped, ... */
  receipt?: Record<string, unknown>;
}

/** An audit row before the ledger numbers it (the store assigns `sequence`; `kind` follows from `action`). */
export type AuditEventInput = Omit<AuditEvent, "sequence" | "kind">;

/** What one ledger transaction stores (Store.appendLedgerBatch); `ignored` counts run events stored already. */
export interface LedgerBatch {
  runEvents: readonly StoredRunEvent[];
  audit: AuditEventInput[];
  cost: readonly CostRow[];
  /**
   * Runs whose end is announced to the other nodes at this transaction's commit (Postgres: `{k: "end"}` on the
   * node-level channel, after the batch's event pointers; SQLite has no other node and ignores them). The writer puts
   * a run's end only in a batch that holds, or follows, every event the run emitted.
   */
  runEnds?: readonly RunEndNotice[];
}

/** A run's end as the other nodes hear it: its last emitted seq, and its session when known. */
export interface RunEndNotice {
  runId: string;
  seq: number;
  sessionKey?: string;
}

/** Which audit rows to list: every filter given must match; newest first. */
export interface AuditQuery {
  sessionKey?: string;
  runId?: string;
  actor?: string;
  action?: AuditAction;
  status?: AuditStatus;
  /** occurredAt >= after */
  after?: number;
  /** occurredAt < before */
  before?: number;
  /** only rows with a smaller sequence: continues a listing after the last row it returned */
  beforeSequence?: number;
  limit: number;
}

/**
 * One model call in the cost ledger (limits/, SPEC 25): who spent (run, session, agent, the token that started the
 * run), on what (provider, model, auth profile once credentials exist), how much (tokens, USD). `costUsd` is absent
 * when the model has no configured price: the tokens still count, the money is unknown.
 */
export interface CostRow {
  id: string;
  ts: number;
  runId: string;
  sessionKey: string;
  agentId: string;
  /** the token identity of the client that started the run (gateway/token-grants.ts), absent for local runs */
  token?: string;
  provider: string;
  model: string;
  /** the auth profile the call used (`provider:name`), once credentials are resolved per call */
  authProfile?: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  totalTokens: number;
  costUsd?: number;
}

/** Which ledger rows to read or sum: every filter given must match; `since` ≤ ts < `until`. */
export interface CostQuery {
  since?: number;
  until?: number;
  agentId?: string;
  sessionKey?: string;
  token?: string;
}

/**
 * `Store.sumCost`'s query: with `idsSince`, the sum also names the rows it counted whose ts is at or after it (the
 * newest `COST_SUM_MAX_IDS` of them, storage/cost-rows.ts), from the same read.
 */
export interface CostSumQuery extends CostQuery {
  idsSince?: number;
}

/** Sums over ledger rows; `unpricedCalls` are calls whose model had no price (tokens only). */
export interface CostTotals {
  usd: number;
  tokens: number;
  calls: number;
  unpricedCalls: number;
  /** with `CostSumQuery.idsSince`: the ids of the recent rows summed, newest first */
  ids?: string[];
}

/** The patches and usage of `Store.updateRuns`, written with a turn's last rows (`Store.appendTranscriptAndEnd`). */
export interface RunsEnd {
  patches: ReadonlyArray<{ runId: string; patch: Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">> }>;
  usage?: SessionUsageAdd;
}

/** What a turn used, added to its session's counters with the turn's end (`Store.updateRuns`). */
export interface SessionUsageAdd {
  sessionKey: string;
  input: number;
  output: number;
  total: number;
  /** the session's new updatedAt (the turn's end) */
  updatedAt: number;
}

export interface Store {
  readonly kind: string;
  /**
   * Why writes fail right now (the disk is full, the device fails), or undefined when the store can write. A store
   * that knows no such state need not implement it.
   */
  storageFault?(): StorageFault | undefined;
  getSession(key: string): Promise<SessionRecord | undefined>;
  getSessionById(sessionId: string): Promise<SessionRecord | undefined>;
  /** creates the session if missing; returns the stored record */
  ensureSession(key: string, agentId: string, now: number): Promise<SessionRecord>;
  updateSession(key: string, patch: Partial<Omit<SessionRecord, "key" | "sessionId" | "createdAt">>): Promise<void>;
  /** newest update first (ties by key); `after` continues a listing after that session */
  listSessions(opts?: { limit?: number; agentId?: string; after?: SessionListPoint }): Promise<SessionRecord[]>;
  countSessions(): Promise<number>;
  /** deletes the session, its transcript and blobs, and the stored events of its runs, in one transaction */
  deleteSession(key: string): Promise<boolean>;
  /** starts a new transcript generation (reset marker row in the old one); returns the new generation */
  resetSession(key: string, now: number, reason: string): Promise<number>;

  /**
   * Appends rows after each session's last seq. Image parts with `data` are stored once per session as blobs (keyed
   * by the sha256 of their bytes); the row keeps `{type: "image", mimeType, blob, bytes, width, height}`.
   */
  appendTranscript(rows: Array<Omit<TranscriptRow, "seq" | "generation">>): Promise<TranscriptRow[]>;
  /** Image parts come back as references (no `data`) unless `imageData` is set. */
  readTranscript(key: string, opts?: TranscriptReadOptions): Promise<TranscriptRow[]>;
  /**
   * The session and its current generation's rows after `afterSeq` (oldest first, images with their data), read
   * together: what a turn's history load needs, in one round trip where the store is remote. Optional: a store
   * without it is read with `getSession` and `readTranscript`.
   */
  readSessionDelta?(key: string, afterSeq: number): Promise<SessionDelta>;
  /**
   * The seq and stored size (bytes of the row's JSON, images apart) of the rows `readTranscript` would give for
   * `opts` (without `maxBytes`), newest first, without reading them: whether older rows exist, how big they are.
   */
  transcriptSizes(key: string, opts?: TranscriptReadOptions): Promise<Array<{ seq: number; bytes: number }>>;

  /**
   * Records a compaction of the session's current generation: a `compaction` row (summary + firstKeptSeq) and the
   * session's compactionCount + 1, in one transaction. Call it under the session write lock.
   */
  appendCompaction(key: string, entry: CompactionEntry): Promise<TranscriptRow>;
  /**
   * The rows a model's history is built from: the latest compaction row of the generation, then the message rows
   * from its firstKeptSeq on (oldest first). Without a compaction, every message row of the generation. Images
   * come with their bytes (`imageData`).
   */
  readContextRows(key: string, opts?: { generation?: number }): Promise<TranscriptRow[]>;

  createRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /**
   * What intake needs before its durable write, in one read (one round trip on a server): the run of an
   * idempotency key, if any, and the session a message goes to, named by key or by session id.
   */
  readIntake(
    runId: string,
    session: { key: string } | { sessionId: string },
  ): Promise<{ run?: RunRecord; session?: SessionRecord }>;
  updateRun(runId: string, patch: Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">>): Promise<void>;
  listRuns(opts: { statuses?: RunStatus[]; sessionKey?: string; limit?: number }): Promise<RunRecord[]>;
  /**
   * The newest `limit` run records (by acceptedAt, ties newest-created first), of one session when `sessionKey` is
   * given. A read of committed records only; no ordering guarantee beyond that.
   */
  listRecentRuns(opts: { limit: number; sessionKey?: string }): Promise<RunRecord[]>;
  /**
   * drops finished run records older than maxAgeMs and beyond maxCount (newest kept), and the stored events of the
   * runs it drops, in one transaction
   */
  pruneRuns(opts: { now: number; maxAgeMs: number; maxCount: number }): Promise<number>;

  /**
   * Appends audit rows in the order given, all or none (one transaction). Each gets the next ledger sequence: a
   * sequence is larger than every one handed out before, and is never handed out again, also after a prune.
   */
  appendAuditEvents(events: AuditEventInput[]): Promise<void>;
  /** Rows matching the query, newest (largest sequence) first, at most `limit`. */
  listAuditEvents(query: AuditQuery): Promise<AuditEvent[]>;
  /** Drops rows that occurred before `now - maxAgeMs`, then the oldest beyond `maxRows`; returns how many went. */
  pruneAuditEvents(opts: { now: number; maxAgeMs: number; maxRows: number }): Promise<number>;
  /** Appends cost ledger rows, all or none (one transaction); a row whose id is stored already is left as it is. */
  appendCostRows(rows: readonly CostRow[]): Promise<void>;
  /** Ledger rows matching the query, oldest first, at most `limit`; `afterSeq` continues a listing (seq is returned). */
  listCostRows(query: CostQuery & { afterSeq?: number; limit: number }): Promise<Array<CostRow & { seq: number }>>;
  /**
   * Sums the rows matching the query (budgets load their window's spend with it), in one read; with `idsSince`,
   * also the ids of the recent rows it summed (limits/window-sums.ts: a call is counted once).
   */
  sumCost(query: CostSumQuery): Promise<CostTotals>;
  /** Drops rows older than `now - maxAgeMs`, then the oldest beyond `maxRows`; returns how many went. */
  pruneCostRows(opts: { now: number; maxAgeMs: number; maxRows: number }): Promise<number>;
  /** Cron jobs added by RPC (config jobs live in the config), oldest first. */
  listCronJobs(): Promise<CronJobRecord[]>;
  /** Adds a job; false (and nothing written) when a job with that id is already stored. */
  addCronJob(job: CronJobRecord): Promise<boolean>;
  /** Replaces a stored job's spec (same id: cron.update); false when no job has that id. */
  updateCronJob(spec: CronJobSpec): Promise<boolean>;
  /** Removes a job and its run history; false when no job had that id. */
  removeCronJob(id: string): Promise<boolean>;
  /** Records a run of a job (also one that was skipped) and returns its id, unique in this store. */
  addCronRun(run: CronRunInfo): Promise<number>;
  updateCronRun(id: number, patch: Partial<Omit<CronRunInfo, "jobId" | "scheduledAt">>): Promise<void>;
  /**
   * The newest `limit` runs of each of `jobIds` (by scheduledAt, then id; newest first), grouped by job; jobs with
   * no run are absent. One call for a whole listing.
   */
  recentCronRuns(jobIds: readonly string[], limit: number): Promise<Map<string, CronRunRecord[]>>;
  /** Runs still `running` (left by a process that stopped): recovery ends them. */
  runningCronRuns(): Promise<CronRunRecord[]>;
  /**
   * Keeps the newest `keep` runs of each job (of `jobId` alone when given); drops the older ones, never a `running`
   * one (its job is still waiting for it to end). Returns how many went.
   */
  pruneCronRuns(keep: number, jobId?: string): Promise<number>;
  /**
   * Stores run events, all in one transaction (all or none). An event whose (runId, seq) is already stored is left
   * as it is: the first write wins, and the count of such events is returned so the caller can report them.
   * Events need not belong to one run nor come in order.
   */
  appendRunEvents(events: readonly StoredRunEvent[]): Promise<{ ignored: number }>;
  /**
   * Run events, audit rows and cost rows in one transaction, all or none, each as its own append call would store
   * it (the run-event writer's batch carries the other ledgers' rows, so they cost no commit of their own).
   */
  appendLedgerBatch(batch: LedgerBatch): Promise<{ ignored: number }>;
  /** A run's stored events with a seq above `afterSeq` (default 0), in seq order, at most `limit` of them. */
  readRunEvents(runId: string, opts?: { afterSeq?: number; limit?: number }): Promise<StoredRunEvent[]>;
  /** The highest stored seq of the run; 0 when none is stored. */
  lastRunEventSeq(runId: string): Promise<number>;

  /**
   * Durable intake (SPEC 15): creates the session if missing and stores the accepted input as a run record, both or
   * neither. Rejects when a run with that id exists already (the first record is kept): run ids are idempotency keys.
   */
  acceptInput(session: { key: string; agentId: string; now: number }, run: RunRecord): Promise<void>;
  /**
   * Applies each patch to its run record, all or none (a turn's host and the messages merged into it end together);
   * with `usage`, the turn's tokens are added to its session's counters (and its updatedAt set) in the same
   * transaction, so a turn's end is one commit.
   */
  updateRuns(
    patches: ReadonlyArray<{ runId: string; patch: Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">> }>,
    usage?: SessionUsageAdd,
  ): Promise<void>;
  /**
   * A turn's last transcript rows (its answer) and its end, one commit: the rows appended as `appendTranscript` would
   * (after the session's appends issued before it), and `updateRuns(end.patches, end.usage)` in the same transaction,
   * all or none. A crash then never leaves an answer whose run is still `running`, nor an end without its answer.
   */
  appendTranscriptAndEnd(
    rows: Array<Omit<TranscriptRow, "seq" | "generation">>,
    end: RunsEnd,
  ): Promise<TranscriptRow[]>;

  /** every stored auth profile health row (a few per profile) */
  listAuthHealth(): Promise<AuthHealthRow[]>;
  /** writes a row's failure state (until, reason, errorCount, lastFailureAt); lastUsed is left as it is */
  putAuthHealth(row: Omit<AuthHealthRow, "lastUsed">): Promise<void>;
  /**
   * Clears the failure state of a profile's rows (one model's, or all of them when `model` is undefined); lastUsed
   * is kept. Returns how many rows had something to clear.
   */
  clearAuthHealth(profileId: string, model?: string): Promise<number>;
  /** records a successful use of a profile (its "" row's lastUsed, never moved back) */
  touchAuthProfile(profileId: string, at: number): Promise<void>;

  /** The operator settings whose key starts with `prefix`, by key. */
  listOperatorSettings(prefix: string): Promise<OperatorSetting[]>;
  /** Writes one operator setting (a new key, or a new value for it). */
  putOperatorSetting(setting: OperatorSetting): Promise<void>;
  close(): Promise<void>;
}

/** A cron job added by RPC, as stored. */
export interface CronJobRecord {
  spec: CronJobSpec;
  createdAt: number;
}

/** A stored run of a cron job. */
export type CronRunRecord = CronRunInfo & { id: number };

/**
 * One agent event as stored (SPEC 15 "runs have cursors"): the fields a query needs, and the event's wire JSON
 * (`{runId, seq, stream, ts, sessionKey, data}`), kept as sent so a replay needs no re-serialization.
 * `deleteSession` drops the events of the session's runs; `pruneRuns` drops those of the runs it prunes.
 */
export interface StoredRunEvent {
  runId: string;
  seq: number;
  ts: number;
  sessionKey: string;
  stream: string;
  json: string;
}
