/**
 * A NUL (or any control character) in a session key, a label or an id (issue 25, item 3): SQLite used to store it,
 * which then aborted `storage migrate` (Postgres TEXT cannot hold a NUL), and a Postgres node answered it with
 * internal_error. Now a real gateway on either backend refuses it at the parameter level, naming the param, and goes
 * on serving.
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient, GatewayRequestError } from "../../dist/client/index.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import { assertBuilt, crashFixtures, killHard, spawnGateway } from "../fixtures/crash/gateway-process.js";

const children: ChildProcess[] = [];
const tmpDirs: string[] = [];
const schemas: TestSchema[] = [];
beforeAll(assertBuilt);
afterEach(async () => {
  for (const c of children.splice(0)) await killHard(c);
});
afterAll(async () => {
  for (const s of schemas) await s.drop();
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-ctrl-keys-"));
  tmpDirs.push(d);
  return d;
}

function config(dir: string, storage: Record<string, unknown>): string {
  const file = path.join(dir, "gateway.json5");
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

async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await call;
  } catch (err) {
    if (err instanceof GatewayRequestError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error("the gateway accepted it");
}

const NUL = "\u0000";
const backends: Array<[string, () => Promise<Record<string, unknown>>]> = [["sqlite", async () => ({})]];
if (testPostgresUrl) {
  backends.push([
    "postgres",
    async () => {
      const ts = await createTestSchema(testPostgresUrl as string);
      schemas.push(ts);
      return { backend: "postgres", postgres: { url: testPostgresUrl, schema: ts.schema } };
    },
  ]);
}

describe.each(backends)("nul-in-session-key-or-label-is-refused on a %s gateway", (_name, storage) => {
  it("agent, chat.send, sessions.patch and chat.history refuse it as invalid_params naming the param, and the gateway goes on serving", async () => {
    const gw = await spawnGateway(tempDir(), config(tempDir(), await storage()), children);
    const client = await GatewayClient.connect({ url: gw.url });
    try {
      const asked: Array<[string, Promise<unknown>, string]> = [
        [
          "agent sessionKey",
          client.request("agent", { message: "hi", idempotencyKey: "nul-1", sessionKey: `agent:main:a${NUL}b` }),
          "params.sessionKey: must not contain control characters",
        ],
        [
          "agent label",
          client.request("agent", { message: "hi", idempotencyKey: "nul-2", label: `tier${NUL}2` }),
          "params.label: must not contain control characters",
        ],
        [
          "agent idempotencyKey",
          client.request("agent", { message: "hi", idempotencyKey: `nul${NUL}3` }),
          "params.idempotencyKey: must not contain control characters",
        ],
        [
          "chat.send sessionKey",
          client.request("chat.send", { sessionKey: `s${NUL}`, message: "hi", idempotencyKey: "nul-4" }),
          "params.sessionKey: must not contain control characters",
        ],
        [
          "sessions.patch label",
          client.request("sessions.patch", { key: "agent:main:main", label: `x${NUL}` }),
          "params.label: must not contain control characters",
        ],
        [
          "chat.history sessionKey",
          client.request("chat.history", { sessionKey: `s${NUL}` }),
          "params.sessionKey: must not contain control characters",
        ],
      ];
      for (const [what, call, message] of asked) {
        expect({ what, ...(await refusal(call)) }).toEqual({ what, code: "invalid_params", message });
      }
      // the same connection, the same process: a clean message runs, and nothing of the refused ones was stored
      const ok = await client.agent({ message: "after", idempotencyKey: "clean-1", sessionKey: "agent:main:clean" });
      expect(ok.status).toBe("ok");
      const list = (await client.request("sessions.list", {})) as { sessions: Array<{ key: string }> };
      expect(list.sessions.map((s) => s.key)).toEqual(["agent:main:clean"]);
    } finally {
      await client.close();
    }
  }, 60_000);
});
