import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { interruptedEnd } from "../../queue/recovery.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { fillStateDir, type StateFixture, sha256Of } from "../../testing/sqlite-state-fixture.js";
import { migrations as sqliteMigrations } from "../migrations.js";
import { SqliteStoreAdapter } from "../sqlite-adapter.js";
import { openStore } from "../sqlite-store.js";
import type { Store } from "../types.js";
import { COPIED_TABLES, type CopyProgress, copySqliteToPostgres } from "./copy-from-sqlite.js";
import { createPostgresPool } from "./pool.js";
import { listOrphanedSessions } from "./queue-adopt.js";
import { openPostgresStore } from "./store.js";

const tmpDirs: string[] = [];
function stateDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-pgcopy-"));
  tmpDirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

describe("storage migrate: what is checked before Postgres is asked", () => {
  it("copies every table the SQLite migrations create (a new table cannot be left behind silently)", () => {
    const db = new Database(":memory:");
    for (const m of [...sqliteMigrations].sort((a, b) => a.version - b.version)) db.exec(m.sql);
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as Array<{
        name: string;
      }>
    ).map((r) => r.name);
    db.close();
    expect(COPIED_TABLES.map((t) => t.table).sort()).toEqual(tables.sort());
  });

  it("refuses a store written by a newer loopgate, naming both migration versions", async () => {
    const dir = stateDir();
    openStore(dir).close();
    const file = path.join(dir, "loopgate.sqlite");
    const raw = new Database(file);
    raw.pragma("user_version = 999");
    raw.close();
    // never reached: the source is refused before the pool is used
    const pool = new pg.Pool({ connectionString: "postgres://nobody@127.0.0.1:1/none" });
    try {
      await expect(copySqliteToPostgres({ sqliteFile: file, pool })).rejects.toThrow(
        /at SQLite migration 999, this build of loopgate knows migrations up to \d+/,
      );
    } finally {
      await pool.end();
    }
  });

  it("refuses a state dir without a store, naming the file", async () => {
    const file = path.join(stateDir(), "loopgate.sqlite");
    const pool = new pg.Pool({ connectionString: "postgres://nobody@127.0.0.1:1/none" });
    try {
      await expect(copySqliteToPostgres({ sqliteFile: file, pool })).rejects.toThrow(
        `cannot open the SQLite store ${file}`,
      );
    } finally {
      await pool.end();
    }
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases copy into a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("storage migrate into a real Postgres", () => {
  let ts: TestSchema;
  const pools: pg.Pool[] = [];
  const stores: Store[] = [];
  const pool = () => {
    const p = createPostgresPool({ ...ts.options, poolMax: 2 });
    pools.push(p);
    return p;
  };
  const freshSchema = async () => {
    const s = await createTestSchema(testPostgresUrl as string);
    schemas.push(s);
    return s;
  };
  const schemas: TestSchema[] = [];

  beforeAll(async () => {
    ts = await freshSchema();
  });
  afterAll(async () => {
    for (const s of stores) await s.close();
    for (const p of pools) await p.end();
    for (const s of schemas) await s.drop();
  });

  describe("a 100-session state dir", () => {
    let dir: string;
    let fixture: StateFixture;
    let progress: CopyProgress[];
    let before: { hash: string; mtimeMs: number };
    let sqlite: Store;
    let postgres: Store;

    beforeAll(async () => {
      dir = stateDir();
      fixture = await fillStateDir(dir, 100);
      const file = path.join(dir, "loopgate.sqlite");
      before = { hash: sha256Of(fs.readFileSync(file)), mtimeMs: fs.statSync(file).mtimeMs };
      progress = [];
      // small batches, so every table of more than 64 rows goes over several transactions
      await copySqliteToPostgres({
        sqliteFile: file,
        pool: pool(),
        batchRows: 64,
        onProgress: (p) => progress.push(p),
      });
      sqlite = new SqliteStoreAdapter(openStore(dir));
      stores.push(sqlite);
      postgres = await openPostgresStore(ts.options);
      stores.push(postgres);
    }, 60_000);

    it("leaves the SQLite file byte for byte as it was", () => {
      const file = path.join(dir, "loopgate.sqlite");
      expect(sha256Of(fs.readFileSync(file))).toBe(before.hash);
      expect(fs.statSync(file).mtimeMs).toBe(before.mtimeMs);
    });

    it("reports progress batch by batch up to each table's count", () => {
      const transcript = progress.filter((p) => p.table === "transcript");
      expect(transcript.map((p) => p.done)).toEqual([64, 128, 192, 256, 320, 384, 400]);
      expect(transcript.every((p) => p.total === 400)).toBe(true);
      expect(progress.filter((p) => p.table === "sessions").at(-1)).toEqual({
        table: "sessions",
        done: 100,
        total: 100,
      });
    });

    it("lists the same 100 sessions from Postgres as from SQLite", async () => {
      expect(await postgres.countSessions()).toBe(100);
      expect(await postgres.listSessions({ limit: 200 })).toEqual(await sqlite.listSessions({ limit: 200 }));
    });

    it("reads every transcript back as SQLite does, the image bytes included", async () => {
      for (const key of fixture.sessionKeys) {
        expect(await postgres.readTranscript(key, { imageData: true })).toEqual(
          await sqlite.readTranscript(key, { imageData: true }),
        );
      }
      const rows = await postgres.readTranscript(fixture.imageSession, { imageData: true });
      expect(JSON.stringify(rows[0]?.message)).toContain('"type":"image"');
    });

    it("keeps run records, run events, the audit ledger and cron as they were", async () => {
      expect(await postgres.listRuns({ limit: 1000 })).toEqual(await sqlite.listRuns({ limit: 1000 }));
      expect(await postgres.getRun(fixture.queuedRunId)).toEqual(await sqlite.getRun(fixture.queuedRunId));
      expect(await postgres.readRunEvents("run-old-7")).toEqual(await sqlite.readRunEvents("run-old-7"));
      expect(await postgres.listAuditEvents({ limit: 1000 })).toEqual(await sqlite.listAuditEvents({ limit: 1000 }));
      expect(await postgres.listCronJobs()).toEqual(await sqlite.listCronJobs());
      expect(await postgres.recentCronRuns([fixture.cronJobId], 10)).toEqual(
        await sqlite.recentCronRuns([fixture.cronJobId], 10),
      );
    });

    it("continues the audit ledger and cron run ids above the copied ones", async () => {
      await postgres.appendAuditEvents([
        {
          eventId: "after-the-move",
          sourceSequence: 1,
          occurredAt: Date.now(),
          actor: "cli",
          action: "agent.run.started",
          status: "started",
          sessionKey: fixture.sessionKeys[0] as string,
          runId: "new-run",
          schemaVersion: 1,
          redaction: "metadata_only",
        },
      ]);
      const [newest] = await postgres.listAuditEvents({ limit: 1 });
      expect(newest?.eventId).toBe("after-the-move");
      expect(newest?.sequence).toBe(fixture.auditRows + 1);
      expect(await postgres.addCronRun({ jobId: fixture.cronJobId, scheduledAt: 1, status: "running" })).toBe(2);
    });

    it("refuses to copy into the same schema again, and copies over it with force", async () => {
      const file = path.join(dir, "loopgate.sqlite");
      await expect(copySqliteToPostgres({ sqliteFile: file, pool: pool() })).rejects.toThrow(
        /already holds Loopgate rows \(sessions: 100, transcript: 400,.*pass --force/,
      );
      const report = await copySqliteToPostgres({ sqliteFile: file, pool: pool(), force: true });
      expect(report.tables.find((t) => t.table === "audit_events")).toEqual({
        table: "audit_events",
        source: fixture.auditRows,
        target: fixture.auditRows,
      });
    });
  });

  it("a new audit row never reuses a seq the SQLite ledger handed out, even one deleted since", async () => {
    const dir = stateDir();
    const store = new SqliteStoreAdapter(openStore(dir));
    await store.appendAuditEvents(
      [1, 2, 3].map((n) => ({
        eventId: `e${n}`,
        sourceSequence: n,
        occurredAt: n,
        actor: "cli",
        action: "agent.run.started" as const,
        status: "started" as const,
        sessionKey: "agent:main:main",
        runId: "r",
        schemaVersion: 1,
        redaction: "metadata_only" as const,
      })),
    );
    await store.close();
    const raw = new Database(path.join(dir, "loopgate.sqlite"));
    raw.prepare("DELETE FROM audit_events WHERE seq = 3").run();
    raw.close();
    const target = await freshSchema();
    const p = createPostgresPool({ ...target.options, poolMax: 2 });
    pools.push(p);
    await copySqliteToPostgres({ sqliteFile: path.join(dir, "loopgate.sqlite"), pool: p });
    const { rows } = await p.query<{ seq: number }>(
      "INSERT INTO audit_events (id, ts, actor, action, status, session_key, run_id, source_seq, schema_version, redaction) VALUES ('e4', 4, 'cli', 'agent.run.started', 'started', 'agent:main:main', 'r', 4, 1, 'metadata_only') RETURNING seq",
    );
    expect(rows[0]?.seq).toBe(4);
  });

  it("queued inputs accepted in one millisecond still run in the order they were accepted", async () => {
    const dir = stateDir();
    const store = new SqliteStoreAdapter(openStore(dir));
    const key = "agent:main:burst";
    for (const runId of ["c", "a", "b"]) {
      await store.acceptInput(
        { key, agentId: "main", now: 5000 },
        { runId, sessionKey: key, status: "queued", acceptedAt: 5000, params: { message: runId } },
      );
    }
    await store.close();
    const target = await freshSchema();
    const p = createPostgresPool({ ...target.options, poolMax: 2 });
    pools.push(p);
    await copySqliteToPostgres({ sqliteFile: path.join(dir, "loopgate.sqlite"), pool: p });
    const pgStore = await openPostgresStore(target.options);
    stores.push(pgStore);
    expect((await pgStore.listRuns({ statuses: ["queued"], sessionKey: key })).map((r) => r.runId)).toEqual([
      "c",
      "a",
      "b",
    ]);
  });

  it("migrate-of-crashed-sqlite-state-does-not-wedge-the-session: a run left running is ended as a restart would, and the input behind it runs", async () => {
    const dir = stateDir();
    const store = new SqliteStoreAdapter(openStore(dir));
    const key = "agent:main:crashed";
    for (const [runId, at] of [
      ["was-running", 5000],
      ["behind-it", 5001],
    ] as const) {
      await store.acceptInput(
        { key, agentId: "main", now: at },
        { runId, sessionKey: key, status: "queued", acceptedAt: at, params: { message: runId } },
      );
    }
    // the gateway died (kill -9) mid-turn: its run stays running in the file, with no process left to end it
    await store.updateRun("was-running", { status: "running", startedAt: 5002 });
    await store.close();
    const target = await freshSchema();
    const p = createPostgresPool({ ...target.options, poolMax: 2 });
    pools.push(p);
    const notes: string[] = [];
    await copySqliteToPostgres({
      sqliteFile: path.join(dir, "loopgate.sqlite"),
      pool: p,
      interrupted: interruptedEnd,
      onNote: (n) => notes.push(n),
    });
    const pgStore = await openPostgresStore(target.options);
    stores.push(pgStore);
    const ended = await pgStore.getRun("was-running");
    const expected = interruptedEnd("was-running");
    expect(ended).toMatchObject({ status: "error", stopReason: "gateway_restart", error: expected.error });
    expect(ended?.result).toEqual(expected.result);
    expect(notes.join("\n")).toContain("1 run the SQLite gateway left running (was-running)");
    // nothing blocks the session any more: the sweeper of any node adopts the queued input
    expect(await listOrphanedSessions(p, { limit: 10 })).toEqual([key]);
  });

  it("nul-in-session-key-or-label-does-not-abort-migrate: such keys and labels are copied with U+FFFD, and said so", async () => {
    const dir = stateDir();
    const store = new SqliteStoreAdapter(openStore(dir));
    // written straight into the store, as a gateway before issue 25 accepted them
    const key = "agent:main:a\u0000b";
    await store.acceptInput(
      { key, agentId: "main", now: 7000 },
      { runId: "nul-run", sessionKey: key, status: "ok", acceptedAt: 7000, params: { message: "hi", sessionKey: key } },
    );
    await store.updateSession(key, { label: "tier\u00002" });
    await store.appendTranscript([
      { sessionKey: key, kind: "message", runId: "nul-run", createdAt: 7001, message: { role: "user", content: "hi" } },
    ]);
    await store.close();
    const target = await freshSchema();
    const p = createPostgresPool({ ...target.options, poolMax: 2 });
    pools.push(p);
    const notes: string[] = [];
    const report = await copySqliteToPostgres({
      sqliteFile: path.join(dir, "loopgate.sqlite"),
      pool: p,
      onNote: (n) => notes.push(n),
    });
    expect(report.tables.every((t) => t.source === t.target)).toBe(true);
    const clean = "agent:main:a\ufffdb";
    expect(notes.join("\n")).toContain(`session key "agent:main:a\\u0000b" is copied as "${clean}"`);
    expect(notes.join("\n")).toContain("1 session label with control characters");
    const pgStore = await openPostgresStore(target.options);
    stores.push(pgStore);
    expect(await pgStore.getSession(clean)).toMatchObject({ key: clean, label: "tier\ufffd2" });
    expect((await pgStore.readTranscript(clean)).map((r) => r.runId)).toEqual(["nul-run"]);
    expect((await pgStore.getRun("nul-run"))?.sessionKey).toBe(clean);
  });

  it("refuses, naming both, a key that would become one already there once its control characters are replaced", async () => {
    const dir = stateDir();
    const store = new SqliteStoreAdapter(openStore(dir));
    for (const key of ["agent:main:x\u0001", "agent:main:x\ufffd"]) await store.ensureSession(key, "main", 1);
    await store.close();
    const target = await freshSchema();
    const p = createPostgresPool({ ...target.options, poolMax: 2 });
    pools.push(p);
    await expect(copySqliteToPostgres({ sqliteFile: path.join(dir, "loopgate.sqlite"), pool: p })).rejects.toThrow(
      'session key "agent:main:x\\u0001" has control characters, and "agent:main:x\ufffd" (what it would be copied as) is a session of its own',
    );
  });

  it("refuses a target schema a gateway node is heartbeating on, even with force", async () => {
    const dir = stateDir();
    await fillStateDir(dir, 1);
    const target = await freshSchema();
    const p = createPostgresPool({ ...target.options, poolMax: 2 });
    pools.push(p);
    await copySqliteToPostgres({ sqliteFile: path.join(dir, "loopgate.sqlite"), pool: p, dryRun: true });
    // the dry run wrote nothing, not even the migrations
    expect((await p.query("SELECT to_regclass('nodes') AS t")).rows[0].t).toBeNull();
    await copySqliteToPostgres({ sqliteFile: path.join(dir, "loopgate.sqlite"), pool: p });
    await p.query(
      "INSERT INTO nodes (id, started_at, heartbeat_at) VALUES ('node-a', 0, (extract(epoch from clock_timestamp()) * 1000)::bigint)",
    );
    await expect(
      copySqliteToPostgres({ sqliteFile: path.join(dir, "loopgate.sqlite"), pool: p, force: true }),
    ).rejects.toThrow(/a gateway node is running on the target schema \(node-a/);
  });
});
