import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import {
  checkSchemaName,
  connectionConfig,
  createPostgresPool,
  inTransaction,
  MAX_NAMED_STATEMENTS,
  NAME_AFTER_USES,
  neverExecuted,
  postgresUrlFrom,
} from "./pool.js";

describe("which Postgres a node uses", () => {
  it("takes storage.postgres.url first, then LOOPGATE_POSTGRES_URL, else none", () => {
    const env = { LOOPGATE_POSTGRES_URL: "postgres://env/db" };
    expect(postgresUrlFrom("postgresql://cfg/db", env)).toBe("postgresql://cfg/db");
    expect(postgresUrlFrom(undefined, env)).toBe("postgres://env/db");
    expect(postgresUrlFrom("  ", {})).toBeUndefined();
  });

  it("names the key whose value is not a postgres URL", () => {
    expect(() => postgresUrlFrom("mysql://x", {})).toThrow("storage.postgres.url: expected a postgres://");
    expect(() => postgresUrlFrom(undefined, { LOOPGATE_POSTGRES_URL: "x" })).toThrow("LOOPGATE_POSTGRES_URL");
  });

  it("accepts only plain schema names (they go into search_path unquoted)", () => {
    expect(checkSchemaName("lg_ab12")).toBe("lg_ab12");
    expect(() => checkSchemaName("x; DROP TABLE runs")).toThrow("not a plain identifier");
  });

  it("sets keepalive, a statement timeout and an application name on every connection", () => {
    const c = connectionConfig({ url: "postgres://h/db", schema: "lg_x" });
    expect(c).toMatchObject({
      keepAlive: true,
      statement_timeout: 30_000,
      application_name: "loopgate",
      options: "-c search_path=lg_x -c plan_cache_mode=force_generic_plan",
    });
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("the node's pool on a real server", () => {
  let ts: TestSchema;
  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
  });
  afterAll(async () => {
    await ts?.drop();
  });

  it("cancels a statement that runs past the timeout, and the pool keeps serving", async () => {
    const pool = createPostgresPool({ ...ts.options, statementTimeoutMs: 50 });
    try {
      await expect(pool.query("SELECT pg_sleep(5)")).rejects.toThrow(/statement timeout/);
      expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it("an idle connection killed by the server is reported, not thrown, and the next query gets a new one", async () => {
    const idleErrors: Error[] = [];
    const pool = createPostgresPool({ ...ts.options, poolMax: 1, onConnectionError: (e) => idleErrors.push(e) });
    const admin = createPostgresPool(ts.options);
    try {
      const { rows } = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      await admin.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
      // bounded: the pool hears of the dead connection asynchronously
      for (let i = 0; i < 200 && idleErrors.length === 0; i++) await admin.query("SELECT 1");
      expect(idleErrors.length).toBe(1);
      const again = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      expect(again.rows[0].pid).not.toBe(rows[0].pid);
    } finally {
      await pool.end();
      await admin.end();
    }
  });

  it("a connection killed in the middle of a transaction fails that transaction only; the process keeps serving", async () => {
    const errors: Error[] = [];
    const pool = createPostgresPool({ ...ts.options, poolMax: 1, onConnectionError: (e) => errors.push(e) });
    const admin = createPostgresPool(ts.options);
    try {
      const tx = inTransaction(pool, async (c) => {
        const { rows } = await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
        await admin.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
        // bounded: until the client has heard of it (without a listener this 'error' event would end the process)
        for (let i = 0; i < 200 && errors.length === 0; i++) await admin.query("SELECT 1");
        await c.query("SELECT 1");
      });
      await expect(tx).rejects.toThrow();
      // reported (the server's FATAL, then the socket closing), not thrown
      expect(errors[0]?.message).toMatch(/terminating connection due to administrator command/);
      expect((await pool.query("SELECT 2 AS two")).rows).toEqual([{ two: 2 }]);
    } finally {
      await pool.end();
      await admin.end();
    }
  });

  it("a statement handed a connection the server just terminated is sent again on a fresh one, not failed", async () => {
    const pool = createPostgresPool({ ...ts.options, poolMax: 3 });
    const admin = createPostgresPool(ts.options);
    try {
      // three idle connections, all terminated at once (a server restart, pg_terminate_backend of the node)
      const held = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
      const pids = await Promise.all(
        held.map(async (c) => (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid),
      );
      for (const c of held) c.release();
      for (const pid of pids) await admin.query("SELECT pg_terminate_backend($1)", [pid]);
      // at once, before the pool may have heard: statements and a transaction still succeed
      const [one, two] = await Promise.all([
        pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid"),
        inTransaction(pool, async (c) => (await c.query<{ n: number }>("SELECT 2 AS n")).rows[0].n),
      ]);
      expect(pids).not.toContain(one.rows[0].pid);
      expect(two).toBe(2);
    } finally {
      await pool.end();
      await admin.end();
    }
  });

  it("a statement that fails for its own reasons is not sent again", async () => {
    const pool = createPostgresPool(ts.options);
    try {
      await pool.query("CREATE TABLE once_only (n INT PRIMARY KEY)");
      await pool.query("INSERT INTO once_only VALUES (1)");
      await expect(pool.query("INSERT INTO once_only VALUES (1)")).rejects.toThrow(/duplicate key/);
      expect(neverExecuted(Object.assign(new Error("x"), { code: "23505" }))).toBe(false);
      expect(neverExecuted(Object.assign(new Error("terminating connection"), { code: "57P01" }))).toBe(true);
      // the socket closed mid-statement: it may have run, so it is the caller's to decide
      expect(neverExecuted(new Error("Connection terminated unexpectedly"))).toBe(false);
    } finally {
      await pool.end();
    }
  });

  // bench README "pg-cpu": the server parsed and planned every statement of a turn afresh, more CPU than running them
  it("a statement the node repeats is parsed once per connection, not at every call", async () => {
    const pool = createPostgresPool({ ...ts.options, poolMax: 1 });
    try {
      const text = "SELECT $1::int + 1 AS n";
      for (let i = 0; i < NAME_AFTER_USES + 3; i++) expect((await pool.query(text, [i])).rows[0].n).toBe(i + 1);
      const { rows } = await pool.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements");
      expect(rows.map((r) => r.statement)).toEqual([text]);
      // and in a transaction on the same connection, under the same name
      await inTransaction(pool, async (c) => expect((await c.query(text, [41])).rows[0].n).toBe(42));
      expect((await pool.query("SELECT count(*)::int AS n FROM pg_prepared_statements")).rows[0].n).toBe(1);
      // and planned once: the server would otherwise keep making a custom plan at every call of some of them
      const { rows: plans } = await pool.query<{ generic_plans: number; custom_plans: number }>(
        "SELECT generic_plans::int, custom_plans::int FROM pg_prepared_statements",
      );
      expect(plans).toEqual([{ generic_plans: NAME_AFTER_USES + 3, custom_plans: 0 }]);
    } finally {
      await pool.end();
    }
  });

  it("statements whose text keeps changing stop being prepared at the cap, and still run", async () => {
    const pool = createPostgresPool({ ...ts.options, poolMax: 1 });
    try {
      for (let i = 0; i < MAX_NAMED_STATEMENTS + 20; i++) {
        for (let k = 0; k < NAME_AFTER_USES; k++) {
          expect((await pool.query(`SELECT $1::int + ${i} AS n`, [k])).rows[0].n).toBe(k + i);
        }
      }
      const { rows } = await pool.query("SELECT count(*)::int AS n FROM pg_prepared_statements");
      expect(rows[0].n).toBe(MAX_NAMED_STATEMENTS);
    } finally {
      await pool.end();
    }
  });

  it("a node keeps reading a table after another node's migration adds a column to it", async () => {
    const pool = createPostgresPool({ ...ts.options, poolMax: 1 });
    const other = createPostgresPool(ts.options);
    try {
      await pool.query("CREATE TABLE grows (k TEXT PRIMARY KEY, a INT)");
      await pool.query("INSERT INTO grows VALUES ('x', 1)");
      const read = "SELECT * FROM grows WHERE k = $1";
      for (let i = 0; i < NAME_AFTER_USES + 5; i++)
        expect((await pool.query(read, ["x"])).rows).toEqual([{ k: "x", a: 1 }]);
      await other.query("ALTER TABLE grows ADD COLUMN b INT NOT NULL DEFAULT 2");
      // the cached plan's columns no longer match: the server refuses it before running anything, the read is sent
      // again under a new name, and the same holds in a transaction (run again from its start)
      expect((await pool.query(read, ["x"])).rows).toEqual([{ k: "x", a: 1, b: 2 }]);
      await other.query("ALTER TABLE grows ADD COLUMN c INT NOT NULL DEFAULT 3");
      let attempts = 0;
      const row = await inTransaction(pool, async (c) => {
        attempts++;
        return (await c.query(read, ["x"])).rows[0];
      });
      expect(row).toEqual({ k: "x", a: 1, b: 2, c: 3 });
      expect(attempts).toBe(2);
    } finally {
      await pool.end();
      await other.end();
    }
  });

  it("works in the schema it was given", async () => {
    const pool = createPostgresPool(ts.options);
    try {
      expect((await pool.query("SELECT current_schema() AS s")).rows[0].s).toBe(ts.schema);
    } finally {
      await pool.end();
    }
  });
});
