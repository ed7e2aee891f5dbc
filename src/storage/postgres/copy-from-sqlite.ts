import Database from "better-sqlite3";
import type pg from "pg";
import { hasControlCharacter, replaceControlCharacters } from "../../protocol/control-chars.js";
import { migrations as sqliteMigrations } from "../migrations.js";
import { migratePostgres } from "./migrate.js";
import { postgresMigrations } from "./migrations.js";

/**
 * Copies a state dir's SQLite store into a Postgres schema (`loopgate storage migrate`). The SQLite file is opened
 * read-only and read in one snapshot (one read transaction), table by table in a stable order, in batches: a large
 * state dir is never all in memory. Each batch is one Postgres transaction. The target must be empty (or emptied with
 * `force`), so a copy never mixes with rows already there; identities continue above what was copied.
 */

/** Every table of the SQLite schema, in copy order, with the order its rows are read in. */
export const COPIED_TABLES: ReadonlyArray<{ table: string; order: string }> = [
  { table: "sessions", order: "key" },
  { table: "transcript", order: "session_key, generation, seq" },
  { table: "blobs", order: "rowid" },
  // accepted order: queue_seq is numbered in this order, so queued inputs run after the move as they would have
  { table: "runs", order: "accepted_at, rowid" },
  { table: "run_events", order: "rowid" },
  { table: "audit_events", order: "seq" },
  { table: "cost_ledger", order: "seq" },
  { table: "cron_jobs", order: "rowid" },
  { table: "cron_runs", order: "id" },
  { table: "auth_health", order: "profile_id, model" },
  { table: "operator_settings", order: "key" },
];

/** Postgres-only tables of cluster state; emptied with `force` too, never copied (SQLite has no nodes). */
const CLUSTER_TABLES = ["session_leases", "nodes"];

/** A node whose heartbeat is newer than this is taken to be running on the target. */
const LIVE_NODE_MS = 15_000;

export class StorageMigrateError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StorageMigrateError";
  }
}

export interface CopyProgress {
  table: string;
  done: number;
  total: number;
}

export interface TableCount {
  table: string;
  /** rows in the SQLite snapshot */
  source: number;
  /** rows in Postgres afterwards (in a dry run: what it holds now) */
  target: number;
}

export interface CopyOptions {
  sqliteFile: string;
  pool: pg.Pool;
  /** check everything and count, but write nothing (not even the Postgres migrations) */
  dryRun?: boolean;
  /** delete every row the target's Loopgate tables hold first, instead of refusing a non-empty target */
  force?: boolean;
  /** rows per Postgres transaction; default 500 */
  batchRows?: number;
  /** a batch also ends once its values reach this many bytes (blobs run to megabytes); default 8 MiB */
  batchBytes?: number;
  onProgress?: (p: CopyProgress) => void;
  /** a step worth a line, as it happens: the migrations applied, what `force` deleted, what was changed on the way */
  onNote?: (text: string) => void;
  /**
   * How a run left `running` is ended (queue/recovery.ts `interruptedEnd`: as the SQLite gateway's next start would
   * have ended it). Without it such a row is copied as it is, and a Postgres node's lease holder ends it `node_lost`.
   */
  interrupted?: (runId: string) => { stopReason: string; error: string; result: Record<string, unknown> };
}

export interface CopyReport {
  dryRun: boolean;
  /** the SQLite store's migration version (user_version) */
  sqliteVersion: number;
  /** Postgres migrations this run applied */
  migrated: number[];
  tables: TableCount[];
}

type Source = Database.Database;

/** Opens the SQLite file read-only and checks this build knows its schema. */
function openSource(file: string): { db: Source; version: number } {
  let db: Source;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new StorageMigrateError(`cannot open the SQLite store ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const version = db.pragma("user_version", { simple: true }) as number;
    const known = Math.max(...sqliteMigrations.map((m) => m.version));
    if (version > known) {
      throw new StorageMigrateError(
        `${file} is at SQLite migration ${version}, this build of loopgate knows migrations up to ${known}: migrate with the loopgate version that wrote it (or a newer one)`,
      );
    }
    if (version === 0) throw new StorageMigrateError(`${file} is not a Loopgate store (no migrations applied)`);
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as Array<{
        name: string;
      }>
    ).map((r) => r.name);
    const unknown = tables.filter((t) => !COPIED_TABLES.some((c) => c.table === t));
    if (unknown.length > 0) {
      throw new StorageMigrateError(`${file} has tables this build does not know how to copy: ${unknown.join(", ")}`);
    }
    return { db, version };
  } catch (err) {
    db.close();
    throw err;
  }
}

function sourceColumns(db: Source, table: string): string[] {
  return (db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as Array<{ name: string }>).map(
    (r) => r.name,
  );
}

function sourceHasTable(db: Source, table: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
}

async function targetColumns(pool: pg.Pool, table: string): Promise<Set<string>> {
  const { rows } = await pool.query<{ column_name: string }>(
    "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
    [table],
  );
  return new Set(rows.map((r) => r.column_name));
}

async function targetHasTable(pool: pg.Pool, table: string): Promise<boolean> {
  const { rows } = await pool.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [table]);
  return rows[0]?.t != null;
}

/** Reachability and the target's migration level, before anything is written. */
async function checkTarget(pool: pg.Pool, dryRun: boolean): Promise<void> {
  const { rows } = await pool.query<{ schema: string | null }>("SELECT current_schema() AS schema");
  if (!rows[0]?.schema) {
    // a dry run does not create the schema: it finds no tables there, as a real run would start from none
    if (dryRun) return;
    throw new StorageMigrateError("the target schema does not exist (and no schema on the search_path does)");
  }
  if (!(await targetHasTable(pool, "schema_migrations"))) return;
  const applied = await pool.query<{ version: number }>("SELECT version FROM schema_migrations");
  const known = new Set(postgresMigrations.map((m) => m.version));
  const newer = applied.rows.map((r) => r.version).filter((v) => !known.has(v));
  if (newer.length > 0) {
    throw new StorageMigrateError(
      `the target schema "${rows[0].schema}" has Postgres migrations this build does not know (${newer.join(", ")}): it was set up by a newer loopgate`,
    );
  }
}

/** Refuses a target a gateway node is running on, and (without force) one that holds rows already. */
async function checkTargetEmpty(pool: pg.Pool, force: boolean): Promise<string[]> {
  if (await targetHasTable(pool, "nodes")) {
    const { rows } = await pool.query<{ id: string }>(
      "SELECT id FROM nodes WHERE heartbeat_at > (extract(epoch from clock_timestamp()) * 1000)::bigint - $1",
      [LIVE_NODE_MS],
    );
    if (rows.length > 0) {
      throw new StorageMigrateError(
        `a gateway node is running on the target schema (${rows.map((r) => r.id).join(", ")}, heartbeat in the last ${LIVE_NODE_MS / 1000} s): stop it first`,
      );
    }
  }
  const nonEmpty: string[] = [];
  for (const { table } of COPIED_TABLES) {
    if (!(await targetHasTable(pool, table))) continue;
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
    if ((rows[0]?.n ?? 0) > 0) nonEmpty.push(`${table}: ${rows[0]?.n}`);
  }
  if (nonEmpty.length > 0 && !force) {
    throw new StorageMigrateError(
      `the target schema already holds Loopgate rows (${nonEmpty.join(", ")}): migrate copies into an empty schema; pass --force to delete them first`,
    );
  }
  return nonEmpty;
}

async function emptyTarget(pool: pg.Pool): Promise<void> {
  const tables: string[] = [];
  for (const t of [...COPIED_TABLES.map((c) => c.table), ...CLUSTER_TABLES]) {
    if (await targetHasTable(pool, t)) tables.push(t);
  }
  if (tables.length > 0) await pool.query(`TRUNCATE ${tables.join(", ")} RESTART IDENTITY`);
}

function valueBytes(v: unknown): number {
  if (typeof v === "string") return v.length;
  if (Buffer.isBuffer(v)) return v.length;
  return 8;
}

async function insertBatch(pool: pg.Pool, table: string, columns: string[], rows: unknown[][]): Promise<void> {
  const width = columns.length;
  const tuples = rows.map((_, i) => `(${columns.map((_, j) => `$${i * width + j + 1}`).join(", ")})`);
  const sql = `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${tuples.join(", ")}`;
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(sql, rows.flat());
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** Columns that hold a session key: sessions.key, and session_key wherever a table has one. */
function keyColumnsOf(table: string, columns: readonly string[]): string[] {
  return columns.filter((c) => c === "session_key" || (table === "sessions" && c === "key"));
}

const showKey = (key: string) => JSON.stringify(key);

/**
 * Session keys with control characters (a gateway before issue 25 stored them; Postgres cannot hold a NUL, and no
 * client may send such a key any more): each is copied with U+FFFD in their place, in every table, so the session
 * keeps its transcript, runs and events and can be addressed again. Refused, naming both, when the new key is one the
 * store already has (two sessions would become one). Returns old key → new key.
 */
function planKeyRenames(db: Source, present: ReadonlyArray<{ table: string }>): Map<string, string> {
  db.function("loopgate_has_control", { deterministic: true }, (v: unknown) =>
    typeof v === "string" && hasControlCharacter(v) ? 1 : 0,
  );
  const sources = present.flatMap(({ table }) =>
    keyColumnsOf(table, sourceColumns(db, table)).map((column) => ({ table, column })),
  );
  const renames = new Map<string, string>();
  for (const { table, column } of sources) {
    const rows = db.prepare(`SELECT DISTINCT ${column} AS k FROM ${table} WHERE loopgate_has_control(${column})`).all();
    for (const { k } of rows as Array<{ k: string }>) renames.set(k, replaceControlCharacters(k));
  }
  const taken = new Map<string, string>();
  for (const [key, clean] of renames) {
    const other = taken.get(clean);
    if (other !== undefined) {
      throw new StorageMigrateError(
        `session keys ${showKey(other)} and ${showKey(key)} have control characters and would both be copied as ${showKey(clean)}: delete or reset one of them with the loopgate that wrote them, then migrate again`,
      );
    }
    taken.set(clean, key);
    for (const { table, column } of sources) {
      if (db.prepare(`SELECT 1 FROM ${table} WHERE ${column} = ? LIMIT 1`).get(clean) !== undefined) {
        throw new StorageMigrateError(
          `session key ${showKey(key)} has control characters, and ${showKey(clean)} (what it would be copied as) is a session of its own: delete or reset one of them with the loopgate that wrote them, then migrate again`,
        );
      }
    }
  }
  return renames;
}

/** What the copy changed on the way, for the notes: counted per kind, the first few named. */
interface Rewrites {
  renames: ReadonlyMap<string, string>;
  interrupted?: CopyOptions["interrupted"];
  now: number;
  endedRuns: string[];
  labels: number;
  /** `table.column` → values with a NUL elsewhere (a run id from an idempotency key): U+FFFD in its place */
  nuls: Map<string, number>;
}

/** The function that rewrites one source row of `table` before it is inserted (in place). */
function rowRewriter(table: string, columns: readonly string[], w: Rewrites): (row: unknown[]) => void {
  const keyAt = keyColumnsOf(table, columns).map((c) => columns.indexOf(c));
  const labelAt = table === "sessions" ? columns.indexOf("label") : -1;
  const at = (c: string) => (table === "runs" ? columns.indexOf(c) : -1);
  const [statusAt, endedAt, reasonAt, errorAt, resultAt, runIdAt] = [
    "status",
    "ended_at",
    "stop_reason",
    "error",
    "result",
    "run_id",
  ].map(at);
  return (row) => {
    for (const i of keyAt) {
      const renamed = w.renames.get(row[i] as string);
      if (renamed !== undefined) row[i] = renamed;
    }
    if (labelAt >= 0 && typeof row[labelAt] === "string" && hasControlCharacter(row[labelAt])) {
      row[labelAt] = replaceControlCharacters(row[labelAt]);
      w.labels++;
    }
    for (let i = 0; i < row.length; i++) {
      const v = row[i];
      if (typeof v === "string" && v.includes("\u0000")) {
        row[i] = v.replaceAll("\u0000", "\uFFFD");
        const where = `${table}.${columns[i]}`;
        w.nuls.set(where, (w.nuls.get(where) ?? 0) + 1);
      }
    }
    // a run its gateway was running when it died: no start on SQLite will end it now, and on Postgres a running
    // row would keep its session's queue from moving; ended here as that start would have ended it
    if (statusAt >= 0 && row[statusAt] === "running" && w.interrupted) {
      const runId = row[runIdAt] as string;
      const end = w.interrupted(runId);
      row[statusAt] = "error";
      if (endedAt >= 0) row[endedAt] = row[endedAt] ?? w.now;
      if (reasonAt >= 0) row[reasonAt] = end.stopReason;
      if (errorAt >= 0) row[errorAt] = end.error;
      if (resultAt >= 0) row[resultAt] = JSON.stringify(end.result);
      w.endedRuns.push(runId);
    }
  };
}

function listSome(ids: readonly string[], max = 10): string {
  const shown = ids.slice(0, max).join(", ");
  return ids.length > max ? `${shown} and ${ids.length - max} more` : shown;
}

/** The notes of what the copy changed (one line each). */
function rewriteNotes(w: Rewrites): string[] {
  const notes: string[] = [];
  for (const [key, clean] of w.renames) {
    notes.push(
      `session key ${showKey(key)} is copied as ${showKey(clean)}: keys may not contain control characters (Postgres cannot store a NUL)`,
    );
  }
  if (w.labels > 0) {
    notes.push(
      `${w.labels} session label${w.labels === 1 ? "" : "s"} with control characters copied with U+FFFD in their place`,
    );
  }
  for (const [where, n] of w.nuls)
    notes.push(`${n} value${n === 1 ? "" : "s"} of ${where} held a NUL: copied with U+FFFD in its place`);
  const n = w.endedRuns.length;
  if (n > 0) {
    notes.push(
      `ended ${n} run${n === 1 ? "" : "s"} the SQLite gateway left running (${listSome(w.endedRuns)}) as its next start would have: error, stop reason gateway_restart`,
    );
  }
  return notes;
}

/** Copies one table, batch by batch; returns the number of rows copied. */
async function copyTable(
  db: Source,
  pool: pg.Pool,
  table: string,
  order: string,
  total: number,
  opts: Required<Pick<CopyOptions, "batchRows" | "batchBytes">> & Pick<CopyOptions, "onProgress">,
  rewrites: Rewrites,
): Promise<number> {
  const columns = sourceColumns(db, table);
  const rewrite = rowRewriter(table, columns, rewrites);
  const target = await targetColumns(pool, table);
  const missing = columns.filter((c) => !target.has(c));
  if (missing.length > 0) {
    throw new StorageMigrateError(
      `the target's ${table} table has no column ${missing.join(", ")}: its Postgres migrations do not match this SQLite store`,
    );
  }
  // runs are read in accepted order; numbering them here keeps that order across nodes (the claim goes by queue_seq)
  const numbered = table === "runs" && target.has("queue_seq") && !columns.includes("queue_seq");
  const insertColumns = numbered ? [...columns, "queue_seq"] : columns;
  const stmt = db.prepare(`SELECT ${columns.join(", ")} FROM ${table} ORDER BY ${order}`).raw(true);
  let batch: unknown[][] = [];
  let bytes = 0;
  let done = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    try {
      await insertBatch(pool, table, insertColumns, batch);
    } catch (err) {
      throw new StorageMigrateError(
        `copying ${table} rows ${done + 1}-${done + batch.length} failed: ${(err as Error).message}`,
        { cause: err },
      );
    }
    done += batch.length;
    batch = [];
    bytes = 0;
    opts.onProgress?.({ table, done, total });
  };
  // Postgres takes at most 65535 parameters per statement
  const maxRows = Math.max(1, Math.min(opts.batchRows, Math.floor(65_535 / insertColumns.length)));
  for (const row of stmt.iterate() as IterableIterator<unknown[]>) {
    rewrite(row);
    if (numbered) row.push(done + batch.length + 1);
    batch.push(row);
    for (const v of row) bytes += valueBytes(v);
    if (batch.length >= maxRows || bytes >= opts.batchBytes) await flush();
  }
  await flush();
  if (done === 0) opts.onProgress?.({ table, done, total });
  return done;
}

/** Identities continue above what was copied: a new ledger row never reuses a seq, not even a pruned one. */
async function continueIdentities(db: Source, pool: pg.Pool, runsCopied: number): Promise<void> {
  const setAbove = async (table: string, column: string, highest: number) => {
    if (!(await targetColumns(pool, table)).has(column)) return;
    // setval(…, n, true): the next value is n + 1; an empty table starts at 1
    await pool.query(`SELECT setval(pg_get_serial_sequence($1, $2), $3, $4)`, [
      table,
      column,
      Math.max(1, highest),
      highest >= 1,
    ]);
  };
  const maxOf = (table: string, column: string) =>
    sourceHasTable(db, table)
      ? ((db.prepare(`SELECT max(${column}) AS m FROM ${table}`).get() as { m: number | null }).m ?? 0)
      : 0;
  // AUTOINCREMENT remembers the highest seq ever handed out, which a prune may have deleted
  const handedOut = sourceHasTable(db, "sqlite_sequence")
    ? ((db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'audit_events'").get() as { seq: number } | undefined)
        ?.seq ?? 0)
    : 0;
  await setAbove("audit_events", "seq", Math.max(maxOf("audit_events", "seq"), handedOut));
  await setAbove("cost_ledger", "seq", maxOf("cost_ledger", "seq"));
  await setAbove("cron_runs", "id", maxOf("cron_runs", "id"));
  await setAbove("runs", "queue_seq", runsCopied);
}

/** Each copied table's rows on both sides (a table the target does not have yet holds none). */
async function bothCounts(pool: pg.Pool, source: ReadonlyMap<string, number>): Promise<TableCount[]> {
  const tables: TableCount[] = [];
  for (const { table } of COPIED_TABLES) {
    const target = (await targetHasTable(pool, table))
      ? (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n
      : 0;
    tables.push({ table, source: source.get(table) ?? 0, target });
  }
  return tables;
}

export async function copySqliteToPostgres(opts: CopyOptions): Promise<CopyReport> {
  const { db, version } = openSource(opts.sqliteFile);
  try {
    const dryRun = opts.dryRun === true;
    await checkTarget(opts.pool, dryRun);
    const migrated = dryRun ? [] : await migratePostgres(opts.pool);
    if (migrated.length > 0) opts.onNote?.(`postgres migrations applied: ${migrated.join(", ")}`);
    const held = await checkTargetEmpty(opts.pool, opts.force === true);
    // one read snapshot for the counts and every table: nothing can change between them (and nobody writes anyway)
    db.exec("BEGIN");
    try {
      const present = COPIED_TABLES.filter((c) => sourceHasTable(db, c.table));
      const counts = new Map(
        present.map((c) => [c.table, (db.prepare(`SELECT count(*) AS n FROM ${c.table}`).get() as { n: number }).n]),
      );
      const rewrites: Rewrites = {
        renames: planKeyRenames(db, present),
        ...(opts.interrupted ? { interrupted: opts.interrupted } : {}),
        now: Date.now(),
        endedRuns: [],
        labels: 0,
        nuls: new Map(),
      };
      if (dryRun) return { dryRun, sqliteVersion: version, migrated, tables: await bothCounts(opts.pool, counts) };
      if (held.length > 0) {
        await emptyTarget(opts.pool);
        opts.onNote?.(`--force: deleted what the target held (${held.join(", ")})`);
      }
      const limits = {
        batchRows: opts.batchRows ?? 500,
        batchBytes: opts.batchBytes ?? 8 * 1024 * 1024,
        onProgress: opts.onProgress,
      };
      let runsCopied = 0;
      for (const { table, order } of present) {
        const n = await copyTable(db, opts.pool, table, order, counts.get(table) ?? 0, limits, rewrites);
        if (table === "runs") runsCopied = n;
      }
      for (const note of rewriteNotes(rewrites)) opts.onNote?.(note);
      await continueIdentities(db, opts.pool, runsCopied);
      const tables = await bothCounts(opts.pool, counts);
      const off = tables.filter((t) => t.source !== t.target);
      if (off.length > 0) {
        throw new StorageMigrateError(
          `the counts differ after the copy: ${off.map((t) => `${t.table} ${t.target} in Postgres, ${t.source} in SQLite`).join("; ")}`,
        );
      }
      return { dryRun, sqliteVersion: version, migrated, tables };
    } finally {
      db.exec("COMMIT");
    }
  } finally {
    db.close();
  }
}
