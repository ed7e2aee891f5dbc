import type pg from "pg";
import { missingPostgresMigrations, type PostgresMigration, postgresMigrations } from "./migrations.js";

/**
 * Brings the database (the connection's search_path schema) up to date. Several nodes may start at once: each takes
 * the same session-level advisory lock first, so one migrates and the others wait, then find nothing left to do.
 * Session-level rather than transaction-level because each migration commits on its own (a failed one leaves the
 * earlier ones applied and recorded); if the migrating process dies, its connection closes and the lock goes with it.
 * The lock key is per schema, so separate schemas (tests, several deployments in one database) do not wait on each
 * other.
 *
 * @returns the versions this call applied (empty when another node had already done it)
 */
export async function migratePostgres(
  pool: pg.Pool,
  list: ReadonlyArray<PostgresMigration> = postgresMigrations,
): Promise<number[]> {
  const client = await pool.connect();
  try {
    // a big index build may take longer than the pool's statement timeout; this connection is discarded afterwards
    await client.query("SET statement_timeout = 0");
    await client.query("SELECT pg_advisory_lock(hashtext('loopgate.migrate.' || current_schema()))");
    try {
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
      );
      const { rows } = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
      const applied: number[] = [];
      for (const m of missingPostgresMigrations(list, new Set(rows.map((r) => r.version)))) {
        await client.query("BEGIN");
        try {
          await client.query(m.sql);
          await client.query(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, (extract(epoch from clock_timestamp()) * 1000)::bigint)",
            [m.version, m.name],
          );
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK").catch(() => {});
          throw new Error(`postgres migration ${m.version} (${m.name}) failed: ${(err as Error).message}`, {
            cause: err,
          });
        }
        applied.push(m.version);
      }
      return applied;
    } finally {
      await client
        .query("SELECT pg_advisory_unlock(hashtext('loopgate.migrate.' || current_schema()))")
        .catch(() => {});
    }
  } finally {
    // never hand a connection with statement_timeout = 0 (or a lock we could not release) back to the pool
    client.release(true);
  }
}
