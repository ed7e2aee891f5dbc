import Database from "better-sqlite3";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migrations as sqliteMigrations } from "../migrations.js";
import { migratePostgres } from "./migrate.js";
import { missingPostgresMigrations, postgresMigrations } from "./migrations.js";
import { createPostgresPool } from "./pool.js";

const m = (version: number) => ({ version, name: `m${version}`, sql: "" });

describe("postgres migration order", () => {
  it("runs every version the database has not applied, in version order, even one below an applied version", () => {
    // a SQLite twin (6) merged after the Postgres-only 1001 was applied must still run
    expect(missingPostgresMigrations([m(1), m(1001), m(6)], new Set([1, 1001])).map((x) => x.version)).toEqual([6]);
    expect(missingPostgresMigrations([m(5), m(1), m(3)], new Set()).map((x) => x.version)).toEqual([1, 3, 5]);
  });

  it("refuses two migrations with one version number", () => {
    expect(() => missingPostgresMigrations([m(2), m(2)], new Set())).toThrow("version 2 is defined twice");
  });

  it("every SQLite migration has a Postgres twin with the same number", () => {
    const pgVersions = new Set(postgresMigrations.map((x) => x.version));
    expect(sqliteMigrations.map((x) => x.version).filter((v) => !pgVersions.has(v))).toEqual([]);
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("postgres migrations on a real server", () => {
  let ts: TestSchema;
  const pools: pg.Pool[] = [];
  const pool = () => {
    const p = createPostgresPool(ts.options);
    pools.push(p);
    return p;
  };

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await ts?.drop();
  });

  it("two nodes starting at once: one migrates, the other waits and finds the schema complete", async () => {
    const [a, b] = [pool(), pool()];
    const [appliedA, appliedB] = await Promise.all([migratePostgres(a), migratePostgres(b)]);
    const all = postgresMigrations.map((x) => x.version).sort((x, y) => x - y);
    // exactly one of them applied everything; neither failed on CREATE TABLE
    expect([appliedA, appliedB].sort((x, y) => y.length - x.length)).toEqual([all, []]);
    const { rows } = await b.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version");
    expect(rows.map((r) => r.version)).toEqual(all);
    // a later start applies nothing
    expect(await migratePostgres(pool())).toEqual([]);
  });

  it("a failing migration names its version, keeps the ones before it, and runs again on the next start", async () => {
    const side = await createTestSchema(testPostgresUrl as string);
    const p = createPostgresPool(side.options);
    try {
      const good = { version: 1, name: "t", sql: "CREATE TABLE t (a INT)" };
      const bad = { version: 2, name: "broken", sql: "ALTER TABLE nope ADD COLUMN b INT" };
      await expect(migratePostgres(p, [good, bad])).rejects.toThrow(/postgres migration 2 \(broken\) failed: .*nope/);
      const fixed = { version: 2, name: "fixed", sql: "ALTER TABLE t ADD COLUMN b INT" };
      expect(await migratePostgres(p, [good, fixed])).toEqual([2]);
      expect((await p.query("SELECT version FROM schema_migrations ORDER BY version")).rows).toEqual([
        { version: 1 },
        { version: 2 },
      ]);
    } finally {
      await p.end();
      await side.drop();
    }
  });

  it("has every table and column the SQLite schema has", async () => {
    const lite = new Database(":memory:");
    for (const mig of [...sqliteMigrations].sort((x, y) => x.version - y.version)) lite.exec(mig.sql);
    const liteTables = (
      lite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as {
        name: string;
      }[]
    ).map((t) => t.name);
    const { rows } = await pool().query<{ table_name: string; column_name: string }>(
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1",
      [ts.schema],
    );
    const pgColumns = new Set(rows.map((r) => `${r.table_name}.${r.column_name}`));
    const missing: string[] = [];
    for (const table of liteTables) {
      for (const col of lite.pragma(`table_info(${table})`) as { name: string }[]) {
        if (!pgColumns.has(`${table}.${col.name}`)) missing.push(`${table}.${col.name}`);
      }
    }
    lite.close();
    expect(liteTables.length).toBeGreaterThanOrEqual(7);
    expect(missing).toEqual([]);
    // and what several nodes need on top
    for (const col of ["nodes.heartbeat_at", "session_leases.token", "runs.node_id", "runs.queue_seq"]) {
      expect(pgColumns.has(col)).toBe(true);
    }
  });

  it("reads a transcript page by (session, generation, seq) through the primary key, not a scan", async () => {
    const p = pool();
    await p.query(
      `INSERT INTO transcript (session_key, generation, seq, kind, created_at, data)
       SELECT 's' || (i % 50), 1 + (i % 3), i, 'user', 0, '{}' FROM generate_series(1, 30000) i`,
    );
    await p.query("ANALYZE transcript");
    const { rows } = await p.query<{ "QUERY PLAN": string }>(
      "EXPLAIN SELECT * FROM transcript WHERE session_key = 's7' AND generation = 2 AND seq > 100 ORDER BY seq LIMIT 50",
    );
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toMatch(/Index (Only )?Scan using transcript_pkey/);
    expect(plan).not.toMatch(/Seq Scan|Sort/);
  });

  it("returns BIGINT columns as numbers and names its connections", async () => {
    const p = pool();
    const { rows } = await p.query<{ n: unknown; app: string }>(
      "SELECT 1700000000000::bigint AS n, current_setting('application_name') AS app",
    );
    expect(rows[0]).toEqual({ n: 1_700_000_000_000, app: `loopgate-test-${ts.schema}` });
  });
});
