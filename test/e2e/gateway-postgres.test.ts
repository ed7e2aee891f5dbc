/*
 * One gateway on Postgres (storage.backend: "postgres") serves a turn as it does on SQLite: real child processes of
 * dist/cli/main.js (run `npm run build` first), the scripted model, a fresh schema dropped afterwards. The turn's
 * rows are read back from Postgres itself, and the state dir holds no SQLite file.
 */
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import { cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

// Skipped without LOOPGATE_TEST_POSTGRES_URL: the gateway needs a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a gateway on Postgres", () => {
  let ts: TestSchema;
  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
  });
  afterAll(async () => {
    await ts?.drop();
  });

  it("serves `loopgate agent -m hi` through the gateway; the transcript, run and events are rows in Postgres", {
    timeout: 60_000,
  }, async () => {
    const s = cliSandbox({
      prefix: "gwpg",
      extraConfig: { storage: { backend: "postgres", postgres: { schema: ts.schema } } },
    });
    // the URL from the environment, as a deployment that keeps credentials out of the file would
    const env = { LOOPGATE_POSTGRES_URL: testPostgresUrl };
    const gw = await s.gateway(["--port", "0"], env);
    const r = await s.agent(["--message", "hi", "--url", gw.url]).done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Hello from the gateway.");

    const db = new pg.Client({ connectionString: testPostgresUrl, options: `-c search_path=${ts.schema}` });
    await db.connect();
    try {
      const transcript = await db.query<{ kind: string; data: string }>(
        "SELECT kind, data FROM transcript WHERE session_key = 'agent:main:main' ORDER BY generation, seq",
      );
      const messages = transcript.rows.map((row) => JSON.parse(row.data).message);
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
      expect(messages[0].content).toBe("hi");
      expect(JSON.stringify(messages[1].content)).toContain("Hello from the gateway.");
      const runs = await db.query<{ run_id: string; status: string }>("SELECT run_id, status FROM runs");
      expect(runs.rows).toEqual([{ run_id: expect.any(String), status: "ok" }]);
      // The run's events are written by the node's run-event writer in batches (a pace of 50 ms on Postgres, after
      // the clients got them), so the CLI can be answered and gone before the batch holding them commits: poll a
      // bounded while, and name the wait if they never come.
      const countEvents = async () =>
        (
          await db.query<{ n: number }>("SELECT count(*)::int AS n FROM run_events WHERE run_id = $1", [
            runs.rows[0].run_id,
          ])
        ).rows[0].n;
      let events = await countEvents();
      for (let i = 0; events === 0 && i < 50; i++) {
        await new Promise((r) => setTimeout(r, 100));
        events = await countEvents();
      }
      expect(events, "no run_events rows within 5 s of the CLI's answer").toBeGreaterThan(0);
    } finally {
      await db.end();
    }
    expect(fs.existsSync(path.join(s.env.LOOPGATE_STATE_DIR as string, "loopgate.sqlite"))).toBe(false);

    // the CLI opens the same store while the gateway runs
    const listed = await s.run(["sessions", "list", "--config", s.config], { env }).done;
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("agent:main:main");

    gw.child.kill("SIGTERM");
    const stopped = await gw.done;
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).toMatch(new RegExp(`storage: postgres postgres://\\S+ schema ${ts.schema}`));
  });
});
