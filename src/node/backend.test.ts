import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseConfig } from "../config/load.js";
import { describeStorage } from "../storage/describe-storage.js";
import { createTestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { createStore, openBackend } from "./backend.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-backend-"));
  dirs.push(dir);
  return dir;
}

function loadProblems(config: unknown, env: NodeJS.ProcessEnv): string {
  const dir = tempDir();
  const file = path.join(dir, "loopgate.json5");
  fs.writeFileSync(file, JSON.stringify(config));
  try {
    loadConfig({ configPath: file, env: { LOOPGATE_STATE_DIR: dir, ...env } });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join("\n");
    throw err;
  }
  return "";
}

describe("openBackend / createStore", () => {
  it("storage.backend: sqlite opens the state dir's database file", async () => {
    const stateDir = tempDir();
    const config = parseConfig({ storage: { backend: "sqlite" } });
    const store = await createStore(config, stateDir);
    try {
      expect(store.kind).toBe("sqlite");
      await store.ensureSession("agent:main:main", "main", 1);
    } finally {
      await store.close();
    }
    expect(fs.existsSync(path.join(stateDir, "loopgate.sqlite"))).toBe(true);
  });

  it("storage.backend: postgres without a URL is a load error naming storage.postgres.url and LOOPGATE_POSTGRES_URL", async () => {
    const problems = loadProblems({ storage: { backend: "postgres" } }, {});
    expect(problems).toMatch(/storage\.postgres\.url: required when storage\.backend is "postgres"/);
    expect(problems).toMatch(/LOOPGATE_POSTGRES_URL/);
    // the environment variable is enough; a URL that is not postgres:// is refused with the key that gave it
    expect(loadProblems({ storage: { backend: "postgres" } }, { LOOPGATE_POSTGRES_URL: "postgres://h/db" })).toBe("");
    expect(loadProblems({ storage: { backend: "postgres", postgres: { url: "mysql://h/db" } } }, {})).toMatch(
      /storage\.postgres\.url: expected a postgres:\/\//,
    );
    expect(loadProblems({ storage: { postgres: { schema: "Bad-Name" } } }, {})).toMatch(/storage\.postgres\.schema/);
    // a config built in code skips the load checks: the factory says the same
    const config = parseConfig({ storage: { backend: "postgres" } });
    await expect(createStore(config, tempDir(), { env: {} })).rejects.toThrow(/storage\.postgres\.url: required/);
  });

  it("an unreachable Postgres server fails the open with storage.postgres and the URL, its password masked", async () => {
    const config = parseConfig({
      storage: { backend: "postgres", postgres: { url: "postgres://lg:s3cret@127.0.0.1:1/db", schema: "lg" } },
    });
    const err = await createStore(config, tempDir()).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      /^storage\.postgres: cannot open the store at postgres:\/\/lg:\*\*\*@127\.0\.0\.1:1\/db schema lg: .*ECONNREFUSED/,
    );
    expect((err as Error).message).not.toContain("s3cret");
    expect(describeStorage(parseConfig({}), "/var/lib/lg")).toBe("sqlite /var/lib/lg/loopgate.sqlite");
  });

  // Skipped without LOOPGATE_TEST_POSTGRES_URL: opening the Postgres backend needs a real server (.ci/run sets it).
  it.skipIf(!testPostgresUrl)(
    "storage.backend: postgres opens a migrated store in storage.postgres.schema with its poolSize and statementTimeoutMs; the URL may come from LOOPGATE_POSTGRES_URL",
    async () => {
      const ts = await createTestSchema(testPostgresUrl as string);
      // a schema that does not exist (any more) is created
      await ts.drop();
      const config = parseConfig({
        storage: { backend: "postgres", postgres: { schema: ts.schema, poolSize: 3, statementTimeoutMs: 4321 } },
      });
      try {
        const backend = await openBackend(config, tempDir(), {
          owner: true,
          env: { LOOPGATE_POSTGRES_URL: testPostgresUrl },
        });
        if (backend.kind !== "postgres") throw new Error(`expected the postgres backend, got ${backend.kind}`);
        const store = backend.store;
        try {
          expect(store.kind).toBe("postgres");
          expect(store.schema).toBe(ts.schema);
          await store.ensureSession("agent:main:main", "main", 1);
          const { rows } = await store.pool.query(
            "SELECT current_schema() AS schema, current_setting('statement_timeout') AS timeout, (SELECT count(*) FROM sessions) AS n",
          );
          expect(rows[0]).toEqual({ schema: ts.schema, timeout: "4321ms", n: 1 });
          expect(store.pool.options.max).toBe(3);
        } finally {
          await store.close();
        }
      } finally {
        await ts.drop();
      }
    },
  );
});
