import fs from "node:fs";

/** The SQLite files of one database: the main file and the WAL-mode companions. */
export function databaseFiles(file: string): string[] {
  return [file, `${file}-wal`, `${file}-shm`];
}

/**
 * Makes the database files readable by their owner only (0600): created that way when missing (SQLite then gives
 * -wal and -shm the same mode), tightened when they exist with wider modes. Tightening existing files is safe —
 * they are ours and nothing else is meant to read them — and it fixes stores made before this rule. The state dir
 * itself is only created 0700, never changed: it may be a directory the user chose and shares with other things.
 */
export function secureDatabaseFiles(file: string): void {
  fs.closeSync(fs.openSync(file, "a", 0o600));
  for (const f of databaseFiles(file)) {
    let mode: number;
    try {
      mode = fs.statSync(f).mode & 0o777;
    } catch {
      continue;
    }
    if ((mode & 0o077) !== 0) fs.chmodSync(f, mode & 0o700);
  }
}
