import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../config/index.js";
import { interruptedEnd } from "../queue/recovery.js";
import { maskPassword } from "../storage/describe-storage.js";
import {
  type CopyProgress,
  type CopyReport,
  copySqliteToPostgres,
  StorageMigrateError,
} from "../storage/postgres/copy-from-sqlite.js";
import { checkSchemaName, createPostgresPool } from "../storage/postgres/pool.js";
import { processesHoldingFile } from "../storage/sqlite-holders.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface StorageMigrateOptions {
  to?: string;
  schema?: string;
  stateDir?: string;
  config?: string;
  dryRun?: boolean;
  force?: boolean;
}

function checkUrl(raw: string | undefined): string {
  const url = raw?.trim();
  if (!url) throw new CliError("--to: expected a postgres:// URL (e.g. postgres://user@host:5432/db)");
  if (!/^postgres(ql)?:\/\//.test(url)) throw new CliError(`--to: expected a postgres:// or postgresql:// URL`);
  try {
    new URL(url);
  } catch {
    throw new CliError(`--to: "${maskPassword(url)}" is not a valid URL`);
  }
  return url;
}

function resolveStateDir(opts: StorageMigrateOptions): string {
  if (opts.stateDir !== undefined) return path.resolve(opts.stateDir);
  return loadConfig({ configPath: opts.config }).stateDir;
}

/** The target schema exists before the pool's search_path points at it (CREATE TABLE needs a schema to land in). */
async function ensureSchema(url: string, schema: string, dryRun: boolean): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url, application_name: "loopgate-storage-migrate" });
  await client.connect();
  try {
    if (dryRun) {
      const { rows } = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
      if (rows.length === 0)
        process.stdout.write(`the target schema ${schema} does not exist yet (a real run creates it)\n`);
    } else {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    }
  } finally {
    await client.end();
  }
}

function progressPrinter(out: NodeJS.WritableStream, now: () => number = Date.now) {
  let last = 0;
  return (p: CopyProgress) => {
    const finished = p.done >= p.total;
    // a line per finished table; a big one also shows where it is, at most once a second
    if (!finished && now() - last < 1000) return;
    last = now();
    out.write(`  ${p.table} ${p.done}/${p.total}\n`);
  };
}

/** The state dir's SQLite file, refused when missing or while another process has it open. */
function sourceFile(stateDir: string): string {
  const file = path.join(stateDir, "loopgate.sqlite");
  if (!fs.existsSync(file)) throw new CliError(`no SQLite store in ${stateDir} (expected ${file})`, EXIT.runError);
  const holders = processesHoldingFile(file);
  if (holders === undefined) {
    process.stderr.write(
      "loopgate: could not check whether a gateway has the store open (no /proc, no lsof): stop it before migrating\n",
    );
  } else if (holders.length > 0) {
    const who = holders.map((h) => `pid ${h.pid}${h.command ? ` (${h.command})` : ""}`).join(", ");
    throw new CliError(
      `the state dir is in use: ${who} has ${file} open; stop the gateway (and any loopgate command using this state dir) first, or the copy would miss what it writes`,
      EXIT.runError,
    );
  }
  return file;
}

function printReport(out: NodeJS.WritableStream, report: CopyReport, file: string, schema: string | undefined): void {
  if (report.dryRun) {
    out.write(`would copy: ${report.tables.map((t) => `${t.table} ${t.source}`).join(", ")}\n`);
    const held = report.tables.filter((t) => t.target > 0);
    if (held.length > 0) {
      out.write(
        `the target holds rows already: ${held.map((t) => `${t.table} ${t.target}`).join(", ")} (refused without --force)\n`,
      );
    }
    out.write("dry run: nothing was written\n");
    return;
  }
  out.write(`verified: ${report.tables.map((t) => `${t.table} ${t.target}/${t.source}`).join(", ")}\n`);
  out.write(
    `done: start the gateways with storage.backend "postgres" and this URL${schema ? ` and schema ${schema}` : ""}; ${file} was not changed\n`,
  );
}

/**
 * `loopgate storage migrate --to postgres://…`: copies the state dir's SQLite store into Postgres (after running the
 * Postgres migrations), then compares the row counts. The SQLite file is only read. Refuses while a process has the
 * store open (a gateway would go on writing rows the copy misses) and when the target holds rows already.
 */
export async function runStorageMigrate(opts: StorageMigrateOptions): Promise<number> {
  const url = checkUrl(opts.to);
  let schema: string | undefined;
  if (opts.schema !== undefined) {
    try {
      schema = checkSchemaName(opts.schema);
    } catch (err) {
      throw new CliError(`--schema: ${(err as Error).message}`);
    }
  }
  const file = sourceFile(resolveStateDir(opts));

  const target = `${maskPassword(url)}${schema ? ` schema ${schema}` : ""}`;
  const out = process.stdout;
  let connectionError: Error | undefined;
  const pool = createPostgresPool({
    url,
    poolMax: 2,
    applicationName: "loopgate-storage-migrate",
    ...(schema ? { schema } : {}),
    onConnectionError: (err) => {
      connectionError = err;
    },
  });
  try {
    try {
      if (schema) await ensureSchema(url, schema, opts.dryRun === true);
      await pool.query("SELECT 1");
    } catch (err) {
      if (err instanceof StorageMigrateError) throw err;
      throw new StorageMigrateError(`cannot reach Postgres at ${target}: ${(err as Error).message}`, { cause: err });
    }
    out.write(`${opts.dryRun ? "dry run: " : ""}copying ${file} into ${target}\n`);
    const report = await copySqliteToPostgres({
      sqliteFile: file,
      pool,
      dryRun: opts.dryRun,
      force: opts.force,
      onProgress: progressPrinter(out),
      onNote: (text) => out.write(`${text}\n`),
      // a run the SQLite gateway was running when it stopped ends as that gateway's next start would have ended it
      interrupted: interruptedEnd,
    });
    printReport(out, report, file, schema);
    return EXIT.ok;
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    const extra = connectionError && !message.includes(connectionError.message) ? ` (${connectionError.message})` : "";
    throw new CliError(`storage migrate: ${message}${extra}`, EXIT.runError);
  } finally {
    await pool.end().catch(() => {});
  }
}
