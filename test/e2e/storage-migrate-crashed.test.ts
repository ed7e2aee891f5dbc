/**
 * `loopgate storage migrate` of a state a gateway left behind badly (issue 25, item 3), by the real CLI, then a real
 * gateway on Postgres: the run the SQLite gateway died in is ended as its restart would have ended it, so the input
 * queued behind it runs (it used to wedge the session: adoption skips a session with a running run); a session key
 * and label holding a NUL (stored by a gateway before the params refused them) no longer abort the copy: they are
 * copied with U+FFFD, reported, and the session is served under its new key.
 */
import { type ChildProcess, execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../dist/client/index.js";
import { SqliteStoreAdapter } from "../../src/storage/sqlite-adapter.js";
import { openStore } from "../../src/storage/sqlite-store.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import { assertBuilt, cli, crashFixtures, killHard, spawnGateway } from "../fixtures/crash/gateway-process.js";

const tmpDirs: string[] = [];
const children: ChildProcess[] = [];
const schemas: TestSchema[] = [];
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-migrate-crashed-"));
  tmpDirs.push(d);
  return d;
}
beforeAll(assertBuilt);
afterEach(async () => {
  for (const c of children.splice(0)) await killHard(c);
});
afterAll(async () => {
  for (const s of schemas) await s.drop();
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

function migrate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, "storage", "migrate", ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === "number" ? code : 1, stdout, stderr });
    });
  });
}

const CRASHED = "agent:main:crashed";
const NUL_KEY = "agent:main:a\u0000b";
const CLEAN_KEY = "agent:main:a\uFFFDb";

/** What a gateway killed mid-turn leaves: a running run and an input behind it; plus an old session with a NUL. */
async function crashedStateDir(dir: string): Promise<void> {
  const store = new SqliteStoreAdapter(openStore(dir));
  const now = Date.now() - 60_000;
  for (const [runId, at] of [
    ["was-running", now],
    ["behind-it", now + 1],
  ] as const) {
    await store.acceptInput(
      { key: CRASHED, agentId: "main", now: at },
      {
        runId,
        sessionKey: CRASHED,
        status: "queued",
        acceptedAt: at,
        params: { message: runId, idempotencyKey: runId, agentId: "main", sessionKey: CRASHED },
        receipt: { kind: "started" },
      },
    );
  }
  await store.updateRun("was-running", { status: "running", startedAt: now + 2 });
  await store.acceptInput(
    { key: NUL_KEY, agentId: "main", now },
    { runId: "nul-run", sessionKey: NUL_KEY, status: "ok", acceptedAt: now, params: { message: "hi" } },
  );
  await store.updateSession(NUL_KEY, { label: "tier\u00002" });
  await store.appendTranscript([
    {
      sessionKey: NUL_KEY,
      kind: "message",
      runId: "nul-run",
      createdAt: now,
      message: { role: "user", content: "hi" },
    },
  ]);
  await store.close();
}

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("storage migrate of a crashed SQLite state with a NUL in a session key", () => {
  it("migrate-of-crashed-sqlite-state-does-not-wedge-the-session, and a NUL key is served as U+FFFD", async () => {
    const stateDir = tempDir();
    await crashedStateDir(stateDir);
    const ts = await createTestSchema(testPostgresUrl as string);
    schemas.push(ts);
    const r = await migrate(["--to", testPostgresUrl as string, "--schema", ts.schema, "--state-dir", stateDir]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "ended 1 run the SQLite gateway left running (was-running) as its next start would have: error, stop reason gateway_restart",
    );
    expect(r.stdout).toContain(`session key "agent:main:a\\u0000b" is copied as "${CLEAN_KEY}"`);
    expect(r.stdout).toContain("1 session label with control characters copied with U+FFFD in their place");

    const config = path.join(tempDir(), "gateway.json5");
    fs.writeFileSync(
      config,
      JSON.stringify({
        agents: { defaults: { model: { primary: "s/m" } } },
        models: { providers: { s: { api: "scripted", script: path.join(crashFixtures, "fast.script.json5") } } },
        messages: { queue: { debounceMs: 0 } },
        storage: { backend: "postgres", postgres: { url: testPostgresUrl, schema: ts.schema } },
      }),
    );
    const gw = await spawnGateway(tempDir(), config, children);
    const client = await GatewayClient.connect({ url: gw.url });
    try {
      expect(await client.agentWait("was-running", 5_000)).toMatchObject({
        status: "error",
        stopReason: "gateway_restart",
      });
      expect((await client.agentWait("behind-it", 20_000)).status).toBe("ok");
      const history = (await client.request("chat.history", { sessionKey: CLEAN_KEY })) as {
        messages: Array<{ role?: string }>;
      };
      expect(history.messages.map((m) => m.role)).toEqual(["user"]);
      const list = (await client.request("sessions.list", {})) as { sessions: Array<{ key: string; label?: string }> };
      expect(list.sessions.find((s) => s.key === CLEAN_KEY)).toMatchObject({ label: "tier\uFFFD2" });
    } finally {
      await client.close();
    }
  }, 90_000);
});
