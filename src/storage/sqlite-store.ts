import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import type { CronJobSpec } from "../protocol/params.js";
import type { AuditEvent, CronRunInfo } from "../protocol/payloads.js";
import type { ChatMessage, ImageBlock, MessagePart } from "../providers/types.js";
import { COST_COLUMNS, costColumns, costSumSql, costWhere, toCostRow, toCostTotals } from "./cost-rows.js";
import { secureDatabaseFiles } from "./file-modes.js";
import { migrations, pendingMigrations } from "./migrations.js";
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
} from "./row-mapping.js";
import { type StorageFault, StorageFaultMonitor } from "./storage-fault.js";
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
  RunRecord,
  RunStatus,
  RunsEnd,
  SessionListPoint,
  SessionRecord,
  SessionUsageAdd,
  StoredRunEvent,
  TranscriptReadOptions,
  TranscriptRow,
} from "./types.js";

/** The JSON `data` column of a transcript row: the message, or the text (and a compaction's firstKeptSeq). */
function rowData(row: Omit<TranscriptRow, "seq" | "generation">): Record<string, unknown> {
  if (row.message) return { message: row.message };
  return row.firstKeptSeq !== undefined ? { text: row.text, firstKeptSeq: row.firstKeptSeq } : { text: row.text };
}

/** Run events per multi-row INSERT: 6 parameters each, far below SQLite's limit of 32,766. */
const RUN_EVENTS_PER_INSERT = 64;

/**
 * The SQLite engine (better-sqlite3, WAL): synchronous, as better-sqlite3 is. Statements are prepared once; every
 * multi-row write is one transaction so a crash never leaves half a turn. Several processes may open the same file:
 * WAL lets readers see committed rows while another process writes, and busy_timeout makes writers queue instead of
 * failing. The runtime reaches it through the Store port (SqliteStoreAdapter, sqlite-adapter.ts), which keeps this
 * synchronous fast path inside; tests and tools that inspect a state dir may use it directly.
 */
export class SqliteStore {
  readonly kind = "sqlite";
  readonly file: string;
  private readonly db: Database.Database;
  private readonly stmts;
  /** notes SQLITE_FULL / SQLITE_IOERR on writes and tells when writing works again */
  readonly faults: StorageFaultMonitor;

  constructor(file: string) {
    this.file = file;
    // transcripts hold what tools returned: the state dir is the owner's alone, the files too (SQLite gives -wal
    // and -shm the main file's mode)
    if (file !== ":memory:") {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      secureDatabaseFiles(file);
    }
    this.faults = new StorageFaultMonitor(path.dirname(file), () => this.probeWrite());
    this.db = new Database(file);
    // busy_timeout first: switching a new file to WAL and migrating it need locks another process may hold
    this.db.pragma("busy_timeout = 5000");
    retryWhileBusy(() => this.db.pragma("journal_mode = WAL"), 5000);
    this.db.pragma("synchronous = NORMAL");
    // A multi-row INSERT inside a transaction (run events, 64 rows a statement) keeps a statement journal of every
    // page it changes, and SQLite spills that journal past 64 KB to a temporary file: at 100 streams that was ~70 %
    // of the gateway's write system calls (two per page: number, then page), none of it needed after the statement.
    // In memory it is bounded by one statement's pages; temporary tables and sorts stay in memory too.
    this.db.pragma("temp_store = MEMORY");
    this.db.pragma("foreign_keys = ON");
    this.migrate();
    const db = this.db;
    this.stmts = {
      getSession: db.prepare("SELECT * FROM sessions WHERE key = ?"),
      addSessionUsage: db.prepare(
        "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, total_tokens = total_tokens + ?, updated_at = ? WHERE key = ?",
      ),
      getSessionById: db.prepare("SELECT * FROM sessions WHERE session_id = ?"),
      insertSession: db.prepare(
        "INSERT OR IGNORE INTO sessions (key, session_id, agent_id, generation, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)",
      ),
      deleteSession: db.prepare("DELETE FROM sessions WHERE key = ?"),
      deleteTranscript: db.prepare("DELETE FROM transcript WHERE session_key = ?"),
      deleteBlobs: db.prepare("DELETE FROM blobs WHERE session_key = ?"),
      insertBlob: db.prepare(
        "INSERT OR IGNORE INTO blobs (session_key, sha256, mime_type, bytes, created_at, data) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      readBlob: db.prepare("SELECT data FROM blobs WHERE session_key = ? AND sha256 = ?"),
      maxSeq: db.prepare("SELECT max(seq) AS m FROM transcript WHERE session_key = ? AND generation = ?"),
      insertRow: db.prepare(
        "INSERT INTO transcript (session_key, generation, seq, kind, run_id, created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      // Where a session's next row goes: its current generation and the next seq of that generation, read inside
      // the caller's IMMEDIATE transaction (the write lock is held from BEGIN on, so no other process can append in
      // between), so they are whatever was committed last (by this process or any other, before or after a reset)
      // and no value is cached between statements. No row comes back when the session is unknown.
      nextRow: db.prepare(
        `SELECT s.generation AS generation,
                coalesce((SELECT max(t.seq) FROM transcript t WHERE t.session_key = s.key AND t.generation = s.generation), 0) + 1 AS seq
         FROM sessions s WHERE s.key = ?`,
      ),
      generation: db.prepare("SELECT generation FROM sessions WHERE key = ?"),
      bumpCompactions: db.prepare("UPDATE sessions SET compaction_count = compaction_count + 1 WHERE key = ?"),
      setGeneration: db.prepare("UPDATE sessions SET generation = ?, updated_at = ? WHERE key = ?"),
      insertRun: db.prepare(
        "INSERT INTO runs (run_id, session_key, status, accepted_at, started_at, ended_at, stop_reason, error, params, result, receipt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      getRun: db.prepare("SELECT * FROM runs WHERE run_id = ?"),
      pruneAge: db.prepare(
        "DELETE FROM runs WHERE status NOT IN ('queued', 'running') AND coalesce(ended_at, accepted_at) < ?",
      ),
      pruneCount: db.prepare(
        "DELETE FROM runs WHERE run_id IN (SELECT run_id FROM runs WHERE status NOT IN ('queued', 'running') ORDER BY accepted_at DESC LIMIT -1 OFFSET ?)",
      ),
      insertAudit: db.prepare(
        "INSERT INTO audit_events (id, ts, actor, action, status, code, session_key, run_id, source_seq, tool_name, tool_call_fp, schema_version, redaction) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      pruneAuditAge: db.prepare("DELETE FROM audit_events WHERE ts < ?"),
      // the rows beyond the newest maxRows: everything below the sequence of the (maxRows)th newest row
      pruneAuditCount: db.prepare(
        "DELETE FROM audit_events WHERE seq <= (SELECT seq FROM audit_events ORDER BY seq DESC LIMIT 1 OFFSET ?)",
      ),
      // the events of the runs the two statements above delete, by the same conditions (run first, then its events)
      pruneAgeEvents: db.prepare(
        "DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM runs WHERE status NOT IN ('queued', 'running') AND coalesce(ended_at, accepted_at) < ?)",
      ),
      pruneCountEvents: db.prepare(
        "DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM runs WHERE status NOT IN ('queued', 'running') ORDER BY accepted_at DESC LIMIT -1 OFFSET ?)",
      ),
      // through the runs table (indexed by session) rather than a second index on run_events every insert would pay
      deleteSessionEvents: db.prepare(
        "DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM runs WHERE session_key = ?)",
      ),
      insertRunEvent: db.prepare(
        // only a (run_id, seq) already stored is skipped; OR IGNORE would also swallow a NOT NULL violation
        "INSERT INTO run_events (run_id, seq, ts, session_key, stream, event) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO NOTHING",
      ),
      readRunEvents: db.prepare(
        "SELECT run_id, seq, ts, session_key, stream, event FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
      ),
      lastRunEventSeq: db.prepare("SELECT max(seq) AS m FROM run_events WHERE run_id = ?"),
    };
  }

  private migrate(): void {
    const latest = Math.max(0, ...migrations.map((m) => m.version));
    if ((this.db.pragma("user_version", { simple: true }) as number) >= latest) return;
    // IMMEDIATE takes the write lock before the version is read, so when several processes open a new file at once
    // exactly one migrates and the others then see the new version (instead of failing on CREATE TABLE).
    this.db
      .transaction(() => {
        const current = this.db.pragma("user_version", { simple: true }) as number;
        for (const m of pendingMigrations(migrations, current)) {
          this.db.exec(m.sql);
          this.db.pragma(`user_version = ${m.version}`);
        }
      })
      .immediate();
  }

  /**
   * IMMEDIATE: the write lock is taken (waiting up to busy_timeout) before the first read. A deferred transaction
   * that reads (e.g. max(seq)) and then writes is refused at once with SQLITE_BUSY when another process committed in
   * between, and busy_timeout does not help, so two processes writing at the same moment would fail.
   */
  /** Statements built from a few fixed shapes are prepared once and reused (preparing costs more than running). */
  private readonly stmtCache = new Map<string, Database.Statement>();
  private prep(sql: string): Database.Statement {
    let stmt = this.stmtCache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.stmtCache.size < 256) this.stmtCache.set(sql, stmt);
    }
    return stmt;
  }

  /** One transaction runner built once (building better-sqlite3's wrapper per call costs more than the INSERT). */
  private runner?: Database.Transaction<(fn: () => unknown) => unknown>;

  /** Store.acceptInput: the session (if missing) and the accepted run record, in one transaction. */
  acceptInput(session: { key: string; agentId: string; now: number }, run: RunRecord): void {
    this.transaction(() => {
      // whether the session exists is all this needs: one column, not the whole row made into a record
      if (this.stmts.generation.get(session.key) === undefined) {
        this.stmts.insertSession.run(session.key, randomUUID(), session.agentId, session.now, session.now);
      }
      this.insertRun(run);
    });
  }

  /** Store.updateRuns: every patch, and the session's usage when given, in one transaction. */
  updateRuns(
    patches: ReadonlyArray<{ runId: string; patch: Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">> }>,
    usage?: SessionUsageAdd,
  ): void {
    this.transaction(() => this.applyRunsEnd({ patches, usage }));
  }

  /** The patches, then the usage; the caller holds the transaction. */
  private applyRunsEnd({ patches, usage }: RunsEnd): void {
    for (const { runId, patch } of patches) this.updateRun(runId, patch);
    if (usage) {
      this.stmts.addSessionUsage.run(usage.input, usage.output, usage.total, usage.updatedAt, usage.sessionKey);
    }
  }

  /** Store.appendTranscriptAndEnd: the rows, then the patches and usage, in one IMMEDIATE transaction. */
  appendTranscriptAndEnd(rows: Array<Omit<TranscriptRow, "seq" | "generation">>, end: RunsEnd): TranscriptRow[] {
    return this.transaction(() => {
      const stored = this.insertRows(rows);
      this.applyRunsEnd(end);
      return stored;
    });
  }

  transaction<T>(fn: () => T): T {
    this.runner ??= this.db.transaction((inner: () => unknown) => inner());
    const runner = this.runner;
    return this.faults.guard(() => runner.immediate(fn) as T);
  }

  storageFault(): StorageFault | undefined {
    return this.faults.current();
  }

  /**
   * Allocates and frees 64 KiB in one commit: it fails with SQLITE_FULL while the file cannot grow (or the WAL
   * cannot be appended to), like a run's next transcript row would. The table is dropped in the same commit.
   */
  private probeWrite(): void {
    this.db
      .transaction(() => {
        this.db.exec("CREATE TABLE IF NOT EXISTS loopgate_storage_probe (b BLOB)");
        this.db.prepare("INSERT INTO loopgate_storage_probe VALUES (zeroblob(65536))").run();
        this.db.exec("DROP TABLE loopgate_storage_probe");
      })
      .immediate();
  }

  getSession(key: string): SessionRecord | undefined {
    const r = this.stmts.getSession.get(key) as Row | undefined;
    return r ? toSession(r) : undefined;
  }

  getSessionById(sessionId: string): SessionRecord | undefined {
    const r = this.stmts.getSessionById.get(sessionId) as Row | undefined;
    return r ? toSession(r) : undefined;
  }

  ensureSession(key: string, agentId: string, now: number): SessionRecord {
    // read first: an INSERT OR IGNORE that inserts nothing still costs a write transaction and its commit
    const existing = this.getSession(key);
    if (existing) return existing;
    this.faults.guard(() => this.stmts.insertSession.run(key, randomUUID(), agentId, now, now));
    return this.getSession(key)!;
  }

  updateSession(key: string, patch: Partial<Omit<SessionRecord, "key" | "sessionId" | "createdAt">>): void {
    const sets: string[] = [];
    const values: unknown[] = [];
    for (const [k, v] of Object.entries(patch)) {
      const col = sessionColumns[k];
      if (!col) throw new Error(`updateSession: unknown field ${k}`);
      sets.push(`${col} = ?`);
      values.push(v ?? null);
    }
    if (sets.length === 0) return;
    this.faults.guard(() => this.prep(`UPDATE sessions SET ${sets.join(", ")} WHERE key = ?`).run(...values, key));
  }

  listSessions(opts: { limit?: number; agentId?: string; after?: SessionListPoint } = {}): SessionRecord[] {
    const where: string[] = [];
    const args: unknown[] = [];
    if (opts.agentId) {
      where.push("agent_id = ?");
      args.push(opts.agentId);
    }
    if (opts.after) {
      // the list's own order: newest update first, then by key
      where.push("(updated_at < ? OR (updated_at = ? AND key > ?))");
      args.push(opts.after.updatedAt, opts.after.updatedAt, opts.after.key);
    }
    const clause = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    const rows = this.prep(`SELECT * FROM sessions ${clause} ORDER BY updated_at DESC, key ASC LIMIT ?`).all(
      ...args,
      opts.limit ?? 1000,
    ) as Row[];
    return rows.map(toSession);
  }

  countSessions(): number {
    return (this.db.prepare("SELECT count(*) AS n FROM sessions").get() as { n: number }).n;
  }

  deleteSession(key: string): boolean {
    return this.transaction(() => {
      this.stmts.deleteSessionEvents.run(key);
      this.stmts.deleteTranscript.run(key);
      this.stmts.deleteBlobs.run(key);
      return this.stmts.deleteSession.run(key).changes > 0;
    });
  }

  resetSession(key: string, now: number, reason: string): number {
    return this.transaction(() => {
      const r = this.stmts.generation.get(key) as { generation: number } | undefined;
      if (!r) throw new Error(`unknown session ${key}`);
      const seq = ((this.stmts.maxSeq.get(key, r.generation) as { m: number | null }).m ?? 0) + 1;
      this.stmts.insertRow.run(key, r.generation, seq, "reset", null, now, JSON.stringify({ text: reason }));
      const next = r.generation + 1;
      this.stmts.setGeneration.run(next, now, key);
      return next;
    });
  }

  appendTranscript(rows: Array<Omit<TranscriptRow, "seq" | "generation">>): TranscriptRow[] {
    if (rows.length === 0) return [];
    return this.transaction(() => this.insertRows(rows));
  }

  /**
   * Appends rows after each session's last seq; the caller holds the transaction. Two statements per row: one read of
   * the generation and the next seq (nextRow), then a plain INSERT. (One `INSERT … SELECT … RETURNING` did both, but
   * SQLite runs it through two temporary B-trees, one because the SELECT reads the table inserted into and one to
   * buffer RETURNING: measured inside a warm turn, that statement cost more than the read and the INSERT together;
   * bench/metrics/store-turn-time.mjs.) The images' blobs go in first, in the same transaction.
   */
  private insertRows(rows: Array<Omit<TranscriptRow, "seq" | "generation">>): TranscriptRow[] {
    const out: TranscriptRow[] = [];
    for (const row of rows) {
      const data = JSON.stringify(
        rowData(row.message ? { ...row, message: this.blobbed(row.sessionKey, row.message, row.createdAt) } : row),
      );
      const pos = this.stmts.nextRow.get(row.sessionKey) as { generation: number; seq: number } | undefined;
      // an unknown session has no generation: nothing is inserted, and the throw rolls back the rows before it
      if (!pos) throw new Error(`appendTranscript: unknown session ${row.sessionKey}`);
      this.stmts.insertRow.run(
        row.sessionKey,
        pos.generation,
        pos.seq,
        row.kind,
        row.runId ?? null,
        row.createdAt,
        data,
      );
      out.push({ ...row, generation: pos.generation, seq: pos.seq });
    }
    return out;
  }

  /**
   * The message as its row stores it: each image's bytes go to the blobs table (once per session and content) and
   * the part keeps `blob` (their sha256) with its type and size. The caller holds the transaction.
   */
  private blobbed(sessionKey: string, message: ChatMessage, now: number): ChatMessage {
    if (message.role === "assistant" || typeof message.content === "string") return message;
    if (!message.content.some((p) => p.type === "image" && p.data !== undefined)) return message;
    const content = message.content.map((part): MessagePart => {
      if (part.type !== "image" || part.data === undefined) return part;
      const bytes = Buffer.from(part.data, "base64");
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      this.stmts.insertBlob.run(sessionKey, sha256, part.mimeType, bytes.byteLength, now, bytes);
      const { data: _data, ...meta } = part;
      return { ...meta, blob: sha256, bytes: bytes.byteLength };
    });
    return { ...message, content };
  }

  /** The message with each image reference's bytes loaded back (for the model); a missing blob stays a reference. */
  private hydrated(sessionKey: string, message: ChatMessage): ChatMessage {
    if (message.role === "assistant" || typeof message.content === "string") return message;
    if (!message.content.some((p) => p.type === "image" && p.blob !== undefined && p.data === undefined))
      return message;
    const content = message.content.map((part): MessagePart => {
      if (part.type !== "image" || part.blob === undefined || part.data !== undefined) return part;
      const found = this.stmts.readBlob.get(sessionKey, part.blob) as { data: Buffer } | undefined;
      return found ? ({ ...part, data: found.data.toString("base64") } satisfies ImageBlock) : part;
    });
    return { ...message, content };
  }

  appendCompaction(key: string, entry: CompactionEntry): TranscriptRow {
    return this.transaction(() => {
      const g = this.stmts.generation.get(key) as { generation: number } | undefined;
      if (!g) throw new Error(`appendCompaction: unknown session ${key}`);
      const last = (this.stmts.maxSeq.get(key, g.generation) as { m: number | null }).m ?? 0;
      const first = entry.firstKeptSeq;
      if (!Number.isInteger(first) || first < 1 || first > last + 1) {
        throw new Error(
          `appendCompaction: firstKeptSeq ${first} of session ${key} must be a row seq from 1 to ${last + 1} (the last row is ${last})`,
        );
      }
      if (entry.summary.trim() === "") throw new Error(`appendCompaction: empty summary for session ${key}`);
      const [row] = this.insertRows([
        {
          sessionKey: key,
          kind: "compaction",
          runId: entry.runId,
          createdAt: entry.createdAt,
          text: entry.summary,
          firstKeptSeq: first,
        },
      ]);
      this.stmts.bumpCompactions.run(key);
      return row;
    });
  }

  readContextRows(key: string, opts: { generation?: number } = {}): TranscriptRow[] {
    const [latest] = this.readTranscript(key, { ...opts, kinds: ["compaction"], limit: 1 });
    // a compaction row written without firstKeptSeq summarized everything before it
    const from = latest ? (latest.firstKeptSeq ?? latest.seq + 1) : 1;
    const messages = this.readTranscript(key, { ...opts, kinds: ["message"], afterSeq: from - 1, imageData: true });
    return latest ? [latest, ...messages] : messages;
  }

  readTranscript(key: string, opts: TranscriptReadOptions = {}): TranscriptRow[] {
    let generation = opts.generation;
    if (generation === undefined) {
      const g = this.stmts.generation.get(key) as { generation: number } | undefined;
      if (!g) return [];
      generation = g.generation;
    }
    if (opts.maxBytes !== undefined) {
      // the sizes first, then only the rows that fit
      const { maxBytes, maxBytesStrict, ...rest } = opts;
      const range = seqRangeWithin(this.transcriptSizes(key, { ...rest, generation }), maxBytes, maxBytesStrict);
      if (!range) return [];
      return this.readTranscript(key, {
        ...rest,
        generation,
        limit: undefined,
        afterSeq: range.oldest - 1,
        beforeSeq: range.newest + 1,
      });
    }
    // newest `limit` rows, returned oldest first. Without a limit (every warm turn's read of the rows since the
    // cached history) the rows are read oldest first at once: re-sorting a newest-first read went through a
    // temporary B-tree, most of the cost of reading a turn's few rows. That read has no ORDER BY (nor LIMIT) either:
    // with one, this SQLite build (STAT4) compiles the statement again on every call, as it does when a parameter
    // it deems plan-affecting is bound anew (measured: ~7 µs a call in a loop, twice to three times the read
    // itself; bench/README.md). The primary key's range scan gives the rows in seq order; should a future plan
    // not, they are sorted here.
    const unlimited = opts.limit === undefined;
    const [sql, args] = this.transcriptQuery("*", key, generation, opts, unlimited ? "none" : "DESC");
    const rows = this.prep(unlimited ? sql : `SELECT * FROM (${sql}) ORDER BY seq ASC`).all(...args) as Row[];
    if (unlimited && !ascendingSeq(rows)) rows.sort((a, b) => (a.seq as number) - (b.seq as number));
    return rows.map((r) => {
      const data = JSON.parse(r.data as string) as TranscriptRowData;
      if (data.message && opts.imageData) data.message = this.hydrated(key, data.message);
      return toTranscriptRow(r, data);
    });
  }

  transcriptSizes(key: string, opts: TranscriptReadOptions = {}): Array<{ seq: number; bytes: number }> {
    let generation = opts.generation;
    if (generation === undefined) {
      const g = this.stmts.generation.get(key) as { generation: number } | undefined;
      if (!g) return [];
      generation = g.generation;
    }
    // octet_length reads the record's header, not the text
    const [sql, args] = this.transcriptQuery("seq, octet_length(data) AS bytes", key, generation, opts);
    return this.prep(sql).all(...args) as Array<{ seq: number; bytes: number }>;
  }

  /**
   * `SELECT <columns>` of the generation's rows the options name, newest first unless told, with its arguments;
   * `order` "none": no ORDER BY (the caller puts the rows in order).
   */
  private transcriptQuery(
    columns: string,
    key: string,
    generation: number,
    opts: TranscriptReadOptions,
    order: "ASC" | "DESC" | "none" = "DESC",
  ): [string, unknown[]] {
    const where = ["session_key = ?", "generation = ?"];
    const args: unknown[] = [key, generation];
    if (opts.beforeSeq !== undefined) {
      where.push("seq < ?");
      args.push(opts.beforeSeq);
    }
    if (opts.afterSeq !== undefined) {
      where.push("seq > ?");
      args.push(opts.afterSeq);
    }
    if (opts.kinds?.length) {
      where.push(`kind IN (${opts.kinds.map(() => "?").join(", ")})`);
      args.push(...opts.kinds);
    }
    // no `LIMIT ?` without a limit: a bound LIMIT, like an ORDER BY, makes this build compile the read anew per call
    const orderBy = order === "none" ? "" : ` ORDER BY seq ${order}`;
    const sql = `SELECT ${columns} FROM transcript WHERE ${where.join(" AND ")}${orderBy}`;
    return opts.limit === undefined ? [sql, args] : [`${sql} LIMIT ?`, [...args, opts.limit]];
  }

  createRun(run: RunRecord): void {
    this.faults.guard(() => this.insertRun(run));
  }

  private insertRun(run: RunRecord): void {
    this.stmts.insertRun.run(
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
    );
  }

  getRun(runId: string): RunRecord | undefined {
    const r = this.stmts.getRun.get(runId) as Row | undefined;
    return r ? toRun(r) : undefined;
  }

  updateRun(runId: string, patch: Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">>): void {
    const sets: string[] = [];
    const values: unknown[] = [];
    for (const [k, v] of Object.entries(patch)) {
      const col = runColumns[k];
      if (!col) throw new Error(`updateRun: unknown field ${k}`);
      sets.push(`${col} = ?`);
      values.push(v === undefined || v === null ? null : jsonRunColumns.has(k) ? JSON.stringify(v) : v);
    }
    if (sets.length === 0) return;
    this.faults.guard(() => this.prep(`UPDATE runs SET ${sets.join(", ")} WHERE run_id = ?`).run(...values, runId));
  }

  listRuns(opts: { statuses?: RunStatus[]; sessionKey?: string; limit?: number }): RunRecord[] {
    const where: string[] = [];
    const args: unknown[] = [];
    if (opts.statuses?.length) {
      where.push(`status IN (${opts.statuses.map(() => "?").join(", ")})`);
      args.push(...opts.statuses);
    }
    if (opts.sessionKey) {
      where.push("session_key = ?");
      args.push(opts.sessionKey);
    }
    const sql = `SELECT * FROM runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY accepted_at ASC, rowid ASC LIMIT ?`;
    return (this.prep(sql).all(...args, opts.limit ?? -1) as Row[]).map(toRun);
  }

  listRecentRuns(opts: { limit: number; sessionKey?: string }): RunRecord[] {
    const sql = opts.sessionKey
      ? "SELECT * FROM runs WHERE session_key = ? ORDER BY accepted_at DESC, rowid DESC LIMIT ?"
      : "SELECT * FROM runs ORDER BY accepted_at DESC, rowid DESC LIMIT ?";
    const args = opts.sessionKey ? [opts.sessionKey, opts.limit] : [opts.limit];
    return (this.prep(sql).all(...args) as Row[]).map(toRun);
  }

  pruneRuns(opts: { now: number; maxAgeMs: number; maxCount: number }): number {
    return this.transaction(() => {
      const before = opts.now - opts.maxAgeMs;
      this.stmts.pruneAgeEvents.run(before);
      const byAge = this.stmts.pruneAge.run(before).changes;
      this.stmts.pruneCountEvents.run(opts.maxCount);
      return byAge + this.stmts.pruneCount.run(opts.maxCount).changes;
    });
  }

  appendRunEvents(events: readonly StoredRunEvent[]): { ignored: number } {
    if (events.length === 0) return { ignored: 0 };
    return this.transaction(() => {
      // a batch goes in as multi-row INSERTs (one statement per RUN_EVENTS_PER_INSERT events instead of one each);
      // a (run_id, seq) already stored inserts nothing, so what was not inserted is what was ignored
      let inserted = 0;
      for (let at = 0; at < events.length; at += RUN_EVENTS_PER_INSERT) {
        const chunk = events.slice(at, at + RUN_EVENTS_PER_INSERT);
        const args: unknown[] = [];
        for (const e of chunk) args.push(e.runId, e.seq, e.ts, e.sessionKey, e.stream, e.json);
        inserted += this.runEventsInsert(chunk.length).run(...args).changes;
      }
      return { ignored: events.length - inserted };
    });
  }

  appendLedgerBatch(batch: LedgerBatch): { ignored: number } {
    // the inner appends' transactions nest (savepoints): one commit for the three
    return this.transaction(() => {
      const result = this.appendRunEvents(batch.runEvents);
      this.appendAuditEvents(batch.audit);
      this.appendCostRows(batch.cost);
      return result;
    });
  }

  /** The INSERT of `n` run events (prepared once per size; at most RUN_EVENTS_PER_INSERT sizes). */
  private runEventsInsert(n: number): Database.Statement {
    if (n === 1) return this.stmts.insertRunEvent;
    const values = Array.from({ length: n }, () => "(?, ?, ?, ?, ?, ?)").join(", ");
    // only a (run_id, seq) already stored is skipped; OR IGNORE would also swallow a NOT NULL violation
    return this.prep(
      `INSERT INTO run_events (run_id, seq, ts, session_key, stream, event) VALUES ${values} ON CONFLICT (run_id, seq) DO NOTHING`,
    );
  }

  readRunEvents(runId: string, opts: { afterSeq?: number; limit?: number } = {}): StoredRunEvent[] {
    const rows = this.stmts.readRunEvents.all(runId, opts.afterSeq ?? 0, opts.limit ?? -1) as Row[];
    return rows.map(toStoredRunEvent);
  }

  lastRunEventSeq(runId: string): number {
    return (this.stmts.lastRunEventSeq.get(runId) as { m: number | null }).m ?? 0;
  }

  appendAuditEvents(events: AuditEventInput[]): void {
    if (events.length === 0) return;
    this.transaction(() => {
      for (const e of events) {
        this.stmts.insertAudit.run(
          e.eventId,
          e.occurredAt,
          e.actor,
          e.action,
          e.status,
          e.code ?? null,
          e.sessionKey,
          e.runId,
          e.sourceSequence,
          e.toolName ?? null,
          e.toolCallFingerprint ?? null,
          e.schemaVersion,
          e.redaction,
        );
      }
    });
  }

  listAuditEvents(query: AuditQuery): AuditEvent[] {
    const where: string[] = [];
    const args: unknown[] = [];
    for (const [field, clause] of auditFilters) {
      const value = query[field];
      if (value === undefined) continue;
      where.push(`${clause} ?`);
      args.push(value);
    }
    const clause = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    const rows = this.prep(`SELECT * FROM audit_events ${clause} ORDER BY seq DESC LIMIT ?`).all(
      ...args,
      query.limit,
    ) as Row[];
    return rows.map(toAuditEvent);
  }

  pruneAuditEvents(opts: { now: number; maxAgeMs: number; maxRows: number }): number {
    return this.transaction(
      () =>
        this.stmts.pruneAuditAge.run(opts.now - opts.maxAgeMs).changes +
        this.stmts.pruneAuditCount.run(opts.maxRows).changes,
    );
  }

  appendCostRows(rows: readonly CostRow[]): void {
    if (rows.length === 0) return;
    const insert = this.prep(
      `INSERT INTO cost_ledger (${COST_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    );
    this.transaction(() => {
      for (const r of rows) insert.run(...costColumns(r));
    });
  }

  listCostRows(query: CostQuery & { afterSeq?: number; limit: number }): Array<CostRow & { seq: number }> {
    const { clause, args } = costWhere(query, () => "?");
    const rows = this.prep(`SELECT * FROM cost_ledger ${clause} ORDER BY seq ASC LIMIT ?`).all(
      ...args,
      query.limit,
    ) as Row[];
    return rows.map(toCostRow);
  }

  sumCost(query: CostSumQuery): CostTotals {
    const { sql, args } = costSumSql(query, () => "?", true);
    return toCostTotals(this.prep(sql).get(...args) as Row);
  }

  pruneCostRows(opts: { now: number; maxAgeMs: number; maxRows: number }): number {
    return this.transaction(
      () =>
        this.prep("DELETE FROM cost_ledger WHERE ts < ?").run(opts.now - opts.maxAgeMs).changes +
        this.prep(
          "DELETE FROM cost_ledger WHERE seq <= (SELECT seq FROM cost_ledger ORDER BY seq DESC LIMIT 1 OFFSET ?)",
        ).run(opts.maxRows).changes,
    );
  }

  listCronJobs(): CronJobRecord[] {
    const rows = this.prep("SELECT spec, created_at FROM cron_jobs ORDER BY created_at, id").all() as Row[];
    return rows.map((r) => ({ spec: JSON.parse(r.spec as string), createdAt: r.created_at as number }));
  }

  addCronJob(job: CronJobRecord): boolean {
    const sql = "INSERT OR IGNORE INTO cron_jobs (id, spec, created_at) VALUES (?, ?, ?)";
    return (
      this.faults.guard(() => this.prep(sql).run(job.spec.id, JSON.stringify(job.spec), job.createdAt)).changes > 0
    );
  }

  updateCronJob(spec: CronJobSpec): boolean {
    const sql = "UPDATE cron_jobs SET spec = ? WHERE id = ?";
    return this.faults.guard(() => this.prep(sql).run(JSON.stringify(spec), spec.id)).changes > 0;
  }

  removeCronJob(id: string): boolean {
    return this.transaction(() => {
      this.prep("DELETE FROM cron_runs WHERE job_id = ?").run(id);
      return this.prep("DELETE FROM cron_jobs WHERE id = ?").run(id).changes > 0;
    });
  }

  addCronRun(run: CronRunInfo): number {
    const sql =
      "INSERT INTO cron_runs (job_id, scheduled_at, started_at, ended_at, run_id, status, error_kind) VALUES (?, ?, ?, ?, ?, ?, ?)";
    const info = this.faults.guard(() =>
      this.prep(sql).run(
        run.jobId,
        run.scheduledAt,
        run.startedAt ?? null,
        run.endedAt ?? null,
        run.runId ?? null,
        run.status,
        run.errorKind ?? null,
      ),
    );
    return Number(info.lastInsertRowid);
  }

  updateCronRun(id: number, patch: Partial<Omit<CronRunInfo, "jobId" | "scheduledAt">>): void {
    const sets: string[] = [];
    const values: unknown[] = [];
    for (const [k, v] of Object.entries(patch)) {
      const col = cronRunColumns[k];
      if (!col) throw new Error(`updateCronRun: unknown field ${k}`);
      sets.push(`${col} = ?`);
      values.push(v ?? null);
    }
    if (sets.length === 0) return;
    this.faults.guard(() => this.prep(`UPDATE cron_runs SET ${sets.join(", ")} WHERE id = ?`).run(...values, id));
  }

  recentCronRuns(jobIds: readonly string[], limit: number): Map<string, CronRunRecord[]> {
    const out = new Map<string, CronRunRecord[]>();
    if (jobIds.length === 0 || limit <= 0) return out;
    // a window per job: one statement for the whole listing, however many jobs
    const sql = `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY job_id ORDER BY scheduled_at DESC, id DESC) AS n
      FROM cron_runs WHERE job_id IN (${jobIds.map(() => "?").join(", ")})) WHERE n <= ? ORDER BY job_id, n`;
    for (const r of this.prep(sql).all(...jobIds, limit) as Row[]) {
      const run = toCronRun(r);
      const list = out.get(run.jobId);
      if (list) list.push(run);
      else out.set(run.jobId, [run]);
    }
    return out;
  }

  runningCronRuns(): CronRunRecord[] {
    return (this.prep("SELECT * FROM cron_runs WHERE status = 'running' ORDER BY id").all() as Row[]).map(toCronRun);
  }

  pruneCronRuns(keep: number, jobId?: string): number {
    const n = Math.max(0, keep);
    if (jobId !== undefined) {
      // one job: its index (job_id, scheduled_at) gives the newest `keep` without reading the other jobs' runs
      const sql = `DELETE FROM cron_runs WHERE job_id = ? AND status <> 'running' AND id NOT IN
        (SELECT id FROM cron_runs WHERE job_id = ? ORDER BY scheduled_at DESC, id DESC LIMIT ?)`;
      return this.faults.guard(() => this.prep(sql).run(jobId, jobId, n).changes);
    }
    const sql = `DELETE FROM cron_runs WHERE status <> 'running' AND id IN (SELECT id FROM (SELECT id, row_number()
      OVER (PARTITION BY job_id ORDER BY scheduled_at DESC, id DESC) AS n FROM cron_runs) WHERE n > ?)`;
    return this.faults.guard(() => this.prep(sql).run(n).changes);
  }

  /** The problems `PRAGMA quick_check` finds, at most `maxProblems` of them; empty when the file is sound. */
  quickCheck(maxProblems: number): string[] {
    const rows = this.db.pragma(`quick_check(${Math.max(1, Math.floor(maxProblems))})`) as Array<{
      quick_check: string;
    }>;
    const problems = rows.map((r) => r.quick_check);
    return problems.length === 1 && problems[0] === "ok" ? [] : problems;
  }

  /** Store.listOperatorSettings */
  listOperatorSettings(prefix: string): OperatorSetting[] {
    // a range of the primary key: keys from the prefix up to the prefix with its last character's successor
    const rows = this.prep(
      "SELECT key, value, updated_at FROM operator_settings WHERE key >= ? AND key < ? ORDER BY key",
    ).all(prefix, prefixEnd(prefix)) as Array<{ key: string; value: string; updated_at: number }>;
    return rows.map((r) => ({ key: r.key, value: r.value, updatedAt: r.updated_at }));
  }

  /** Store.putOperatorSetting */
  putOperatorSetting(setting: OperatorSetting): void {
    this.prep(
      `INSERT INTO operator_settings (key, value, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    ).run(setting.key, setting.value, setting.updatedAt);
  }

  /** Store.listAuthHealth */
  listAuthHealth(): AuthHealthRow[] {
    return (this.prep("SELECT * FROM auth_health ORDER BY profile_id, model").all() as Row[]).map(toAuthHealth);
  }

  /** Store.putAuthHealth: the failure state of one row; lastUsed stays */
  putAuthHealth(row: Omit<AuthHealthRow, "lastUsed">): void {
    const sql = `INSERT INTO auth_health (profile_id, model, until, reason, error_count, last_failure_at)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (profile_id, model) DO UPDATE SET until = excluded.until, reason = excluded.reason,
        error_count = excluded.error_count, last_failure_at = excluded.last_failure_at`;
    this.faults.guard(() =>
      this.prep(sql).run(
        row.profileId,
        row.model,
        row.until ?? null,
        row.reason ?? null,
        row.errorCount,
        row.lastFailureAt ?? null,
      ),
    );
  }

  /** Store.clearAuthHealth */
  clearAuthHealth(profileId: string, model?: string): number {
    const which = model === undefined ? "" : " AND model = ?";
    const sql = `UPDATE auth_health SET until = NULL, reason = NULL, error_count = 0, last_failure_at = NULL
      WHERE profile_id = ?${which} AND (until IS NOT NULL OR reason IS NOT NULL OR error_count > 0)`;
    const args = model === undefined ? [profileId] : [profileId, model];
    return this.faults.guard(() => this.prep(sql).run(...args)).changes;
  }

  /** Store.touchAuthProfile */
  touchAuthProfile(profileId: string, at: number): void {
    const sql = `INSERT INTO auth_health (profile_id, model, last_used) VALUES (?, '', ?)
      ON CONFLICT (profile_id, model) DO UPDATE SET last_used = max(coalesce(last_used, 0), excluded.last_used)`;
    this.faults.guard(() => this.prep(sql).run(profileId, at));
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

export function openStore(stateDir: string): SqliteStore {
  return new SqliteStore(path.join(stateDir, "loopgate.sqlite"));
}

/**
 * Switching a brand-new file to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY at once (without calling
 * the busy handler) when another process is switching the same file at that moment: several CLI commands started
 * together on a fresh install. Retried briefly, synchronously (the constructor is synchronous).
 */
function retryWhileBusy<T>(fn: () => T, timeoutMs: number): T {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + timeoutMs;
  for (let waitMs = 1; ; waitMs = Math.min(waitMs * 2, 50)) {
    try {
      return fn();
    } catch (err) {
      const busy = (err as { code?: string }).code === "SQLITE_BUSY";
      if (!busy || Date.now() >= deadline) throw err;
      Atomics.wait(nap, 0, 0, waitMs);
    }
  }
}

/** The first string after every string that starts with `prefix` ("" → past everything). */
export function prefixEnd(prefix: string): string {
  if (prefix === "") return "\u{10FFFF}";
  return prefix.slice(0, -1) + String.fromCodePoint((prefix.codePointAt(prefix.length - 1) ?? 0) + 1);
}

/** Whether the rows' seqs only grow (what the primary key's range scan gives). */
function ascendingSeq(rows: Row[]): boolean {
  for (let i = 1; i < rows.length; i++) if ((rows[i - 1].seq as number) > (rows[i].seq as number)) return false;
  return true;
}
