import path from "node:path";
import { SqliteStore } from "./sqlite-store.js";

/** quick_check stops after this many problems: the first few say enough, and the answer stays one line. */
const MAX_PROBLEMS = 5;

/** A database that failed its integrity check (or could not even be opened as one). */
export class CorruptDatabaseError extends Error {
  readonly file: string;
  constructor(file: string, problem: string, opts?: { cause?: unknown }) {
    super(
      `the database ${file} is corrupt (${problem}). Stop every loopgate process using it, then restore it from a ` +
        `backup, or salvage what is readable: sqlite3 ${file} ".recover" | sqlite3 ${file}.recovered, and move ` +
        `${file}.recovered into its place (keep the damaged file; remove its -wal and -shm first)`,
      opts,
    );
    this.name = "CorruptDatabaseError";
    this.file = file;
  }
}

function isCorruption(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB");
}

/**
 * Opens the store in `stateDir` for a long-running owner (the gateway): a file SQLite cannot read, or one whose
 * pages fail `PRAGMA quick_check`, is refused with a CorruptDatabaseError that says how to restore it. The check
 * reads every page (seconds per GB), so a huge store may skip it.
 */
export function openCheckedStore(stateDir: string, opts: { quickCheck: boolean }): SqliteStore {
  const file = path.join(stateDir, "loopgate.sqlite");
  let store: SqliteStore;
  try {
    store = new SqliteStore(file);
  } catch (err) {
    if (isCorruption(err)) throw new CorruptDatabaseError(file, (err as Error).message, { cause: err });
    throw err;
  }
  if (!opts.quickCheck) return store;
  try {
    const problems = store.quickCheck(MAX_PROBLEMS);
    const oneLine = problems.map((p) => p.replace(/\s*\n\s*/g, " "));
    if (problems.length > 0) throw new CorruptDatabaseError(file, `quick_check: ${oneLine.join("; ")}`);
    return store;
  } catch (err) {
    store.close();
    if (err instanceof CorruptDatabaseError) throw err;
    if (isCorruption(err)) throw new CorruptDatabaseError(file, (err as Error).message, { cause: err });
    throw err;
  }
}
