/**
 * `loopgate storage migrate --to postgres://…` (issue 14): a SQLite state dir of 100 sessions is copied into a fresh
 * Postgres schema by the real CLI, and a real gateway process on Postgres then serves it: the sessions, their
 * history, a new turn after the old rows, and the input that was left queued. Plus what it refuses.
 */
import { type ChildProcess, execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../dist/client/index.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import { fillStateDir, type StateFixture, sha256Of } from "../../src/testing/sqlite-state-fixture.js";
import { assertBuilt, cli, crashFixtures, killHard, spawnGateway } from "../fixtures/crash/gateway-process.js";

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function migrate(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, "storage", "migrate", ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? 1) : 0;
        resolve({ code: typeof code === "number" ? code : 1, stdout, stderr });
      },
    );
  });
}

const tmpDirs: string[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-migrate-e2e-"));
  tmpDirs.push(d);
  return d;
}

/** A gateway config answering every message with "ran: <message>", on SQLite or on a Postgres schema. */
function gatewayConfig(dir: string, storage: Record<string, unknown> = {}): string {
  const file = path.join(dir, `gateway-${Object.keys(storage).length ? "pg" : "sqlite"}.json5`);
  fs.writeFileSync(
    file,
    JSON.stringify({
      agents: { defaults: { model: { primary: "s/m" } } },
      models: { providers: { s: { api: "scripted", script: path.join(crashFixtures, "fast.script.json5") } } },
      messages: { queue: { debounceMs: 0 } },
      storage,
    }),
  );
  return file;
}

const children: ChildProcess[] = [];
beforeAll(assertBuilt);
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});
afterAll(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

describe("storage migrate: bad targets are refused without touching anything", () => {
  it("a URL that is not postgres:// is a usage error (exit 2) naming --to", async () => {
    const dir = tempDir();
    const r = await migrate(["--to", "http://127.0.0.1:5432/test", "--state-dir", dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--to: expected a postgres:// or postgresql:// URL");
  });

  it("an unreachable server fails with exit 1, naming the server (password hidden)", async () => {
    const dir = tempDir();
    await fillStateDir(dir, 1);
    // port 1 on loopback: nothing listens, the connection is refused at once
    const r = await migrate(["--to", "postgres://someone:secret@127.0.0.1:1/test", "--state-dir", dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot reach Postgres at postgres://someone:***@127.0.0.1:1/test");
    expect(r.stderr).not.toContain("secret");
  });

  it("a state dir without a store is refused, naming the file it looked for", async () => {
    const dir = tempDir();
    const r = await migrate(["--to", "postgres://127.0.0.1:1/test", "--state-dir", dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no SQLite store in ${dir}`);
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("storage migrate of a 100-session state dir, then a gateway on Postgres", () => {
  const url = testPostgresUrl as string;
  const schemas: TestSchema[] = [];
  let ts: TestSchema;
  let stateDir: string;
  let fixture: StateFixture;
  let first: CliResult;
  let sqliteHashBefore: string;

  beforeAll(async () => {
    ts = await createTestSchema(url);
    schemas.push(ts);
    stateDir = tempDir();
    // recent times: the gateway would prune finished runs and audit rows past their retention at start
    fixture = await fillStateDir(stateDir, 100, Date.now() - 10 * 60_000);
    sqliteHashBefore = sha256Of(fs.readFileSync(path.join(stateDir, "loopgate.sqlite")));
    first = await migrate(["--to", url, "--schema", ts.schema, "--state-dir", stateDir]);
  }, 90_000);
  afterAll(async () => {
    for (const s of schemas) await s.drop();
  });

  it("copies every table, prints progress and the verified counts, and leaves the SQLite file as it was", () => {
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("  sessions 100/100\n");
    expect(first.stdout).toContain("  transcript 400/400\n");
    expect(first.stdout).toMatch(
      /verified: sessions 100\/100, transcript 400\/400, blobs 1\/1, runs 101\/101, run_events 200\/200, audit_events 200\/200, cost_ledger 0\/0, cron_jobs 1\/1, cron_runs 1\/1/,
    );
    expect(sha256Of(fs.readFileSync(path.join(stateDir, "loopgate.sqlite")))).toBe(sqliteHashBefore);
  });

  it("a gateway on the Postgres schema serves the migrated sessions, continues them, and runs the queued input", async () => {
    const gw = await spawnGateway(
      tempDir(),
      gatewayConfig(tempDir(), { backend: "postgres", postgres: { url, schema: ts.schema } }),
      children,
    );
    const client = await GatewayClient.connect({ url: gw.url });
    try {
      const keys: string[] = [];
      let cursor: string | undefined;
      do {
        const page = (await client.request("sessions.list", { limit: 40, ...(cursor ? { cursor } : {}) })) as {
          sessions: Array<{ key: string }>;
          nextCursor?: string;
        };
        keys.push(...page.sessions.map((s) => s.key));
        cursor = page.nextCursor;
      } while (cursor);
      expect(keys.sort()).toEqual([...fixture.sessionKeys].sort());

      const key = fixture.sessionKeys[5] as string;
      const old = (await client.request("chat.history", { sessionKey: key })) as {
        generation: number;
        messages: Array<{ seq: number; role?: string }>;
      };
      expect(old.generation).toBe(1);
      expect(old.messages.map((m) => [m.seq, m.role])).toEqual([
        [1, "user"],
        [2, "assistant"],
        [3, "toolResult"],
        [4, "assistant"],
      ]);

      // the input left queued before the move is recovered from Postgres and runs
      const queued = await client.agentWait(fixture.queuedRunId, 20_000);
      expect(queued.status).toBe("ok");

      const turn = await client.agent({ message: "after the move", idempotencyKey: "new-turn-1", sessionKey: key });
      expect(turn.status).toBe("ok");
      const now = (await client.request("chat.history", { sessionKey: key })) as {
        generation: number;
        messages: Array<{ seq: number; role?: string; content?: unknown }>;
      };
      expect(now.generation).toBe(1);
      expect(now.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(JSON.stringify(now.messages[5]?.content)).toContain("ran: after the move");

      const image = (await client.request("chat.history", { sessionKey: fixture.imageSession })) as {
        messages: Array<{ content?: unknown }>;
      };
      expect(JSON.stringify(image.messages[0]?.content)).toContain('"type":"image"');
    } finally {
      await client.close();
      // SIGTERM: the node drains and leaves (its node row goes), as an operator stops it; a node killed with -9 would
      // still count as running on the schema for a lease, and the next case would be refused for that instead
      const exited = new Promise((r) => gw.child.once("exit", r));
      gw.child.kill("SIGTERM");
      await exited;
    }
  }, 90_000);

  it("refuses to copy into a schema that holds rows already (exit 1, the counts and --force named)", async () => {
    const again = await migrate(["--to", url, "--schema", ts.schema, "--state-dir", stateDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/the target schema already holds Loopgate rows \(sessions: 100, .*pass --force/);
  }, 60_000);

  it("refuses while a gateway has the state dir's store open, naming its pid", async () => {
    const dir = tempDir();
    await fillStateDir(dir, 2);
    const gw = await spawnGateway(dir, gatewayConfig(tempDir()), children);
    try {
      const target = await createTestSchema(url);
      schemas.push(target);
      const r = await migrate(["--to", url, "--schema", target.schema, "--state-dir", dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`the state dir is in use: pid ${gw.child.pid} (`);
      expect(r.stderr).toContain("stop the gateway");
    } finally {
      await killHard(gw);
    }
  }, 60_000);

  it("a dry run counts what it would copy and writes nothing", async () => {
    const target = await createTestSchema(url);
    schemas.push(target);
    const r = await migrate(["--to", url, "--schema", target.schema, "--state-dir", stateDir, "--dry-run"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("would copy: sessions 100, transcript 400, blobs 1, runs 101");
    expect(r.stdout).toContain("dry run: nothing was written");
    const pg = (await import("pg")).default;
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1", [target.schema]);
      expect(rows[0].n).toBe(0);
    } finally {
      await c.end();
    }
  }, 60_000);
});
