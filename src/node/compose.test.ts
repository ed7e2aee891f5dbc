import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { PgEventBus } from "../events/pg-bus.js";
import { AgentEventBus } from "../infra/events.js";
import { silentLogger } from "../infra/logger.js";
import { ScriptedProvider } from "../providers/scripted.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { openStore } from "../storage/sqlite-store.js";
import { createTestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { composeNode, NodeRoleError } from "./compose.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-node-"));
  dirs.push(dir);
  return dir;
}

/** What a Postgres server says while it restarts: worth a retry there, meaningless for SQLite. */
const adminShutdown = Object.assign(new Error("terminating connection due to administrator command"), {
  code: "57P01",
});

const scripted = { s: new ScriptedProvider("s", () => ({ text: "done" })) };
const modelConfig = { agents: { defaults: { model: { primary: "s/m" } } } };

describe("composeNode", () => {
  it("a SQLite node gets one process's parts: the in-process bus, the file session lock, no cluster, no retryable store errors", async () => {
    const node = await composeNode({
      role: "test",
      config: parseConfig({}),
      stateDir: tempDir(),
      logger: silentLogger,
    });
    try {
      expect(node.backend.kind).toBe("sqlite");
      expect(node.runtime.bus).toBeInstanceOf(AgentEventBus);
      expect(node.runtime.sessionLocks.kind).toBe("file");
      expect(node.cluster).toBeUndefined();
      expect(node.crossNode).toBeUndefined();
      expect(node.isTransientStoreError(adminShutdown)).toBe(false);
    } finally {
      await node.close();
    }
  });

  it("loopgate agent --local's role on a Postgres config is refused before the database is reached", async () => {
    // nothing listens on port 1: had the node tried to open the store, the error would be ECONNREFUSED
    const config = parseConfig({
      storage: { backend: "postgres", postgres: { url: "postgres://u:pw@127.0.0.1:1/db" } },
    });
    const err = await composeNode({ role: "embedded", config, stateDir: tempDir(), logger: silentLogger }).catch(
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(NodeRoleError);
    expect((err as Error).message).toMatch(/storage\.backend "postgres" \(a gateway fleet\).*without a lease/);
  });

  it("close() stores the run events still buffered, then closes the store, once however often it is called", async () => {
    const stateDir = tempDir();
    const engine = openStore(stateDir);
    const adapter = new SqliteStoreAdapter(engine);
    let storeCloses = 0;
    const close = adapter.close.bind(adapter);
    adapter.close = () => {
      storeCloses++;
      return close();
    };
    const node = await composeNode({
      role: "test",
      config: parseConfig(modelConfig),
      stateDir,
      backend: { kind: "sqlite", store: adapter },
      providers: scripted,
      logger: silentLogger,
    });
    const accepted = await node.service.accept({ message: "hi", idempotencyKey: "r1", sessionKey: "agent:main:t" });
    expect((await node.service.final(accepted.runId)).status).toBe("ok");
    // the writer batches events 50 ms apart: right after the turn they are still in memory
    await Promise.all([node.close(), node.close()]);
    await node.close();
    expect(storeCloses).toBe(1);
    const reopened = openStore(stateDir);
    try {
      const stored = reopened.lastRunEventSeq(accepted.runId);
      console.log(`run events stored at close: ${stored}`);
      expect(stored).toBeGreaterThan(0);
    } finally {
      reopened.close();
    }
  });

  // Skipped without LOOPGATE_TEST_POSTGRES_URL: a Postgres node needs a real server.
  it.skipIf(!testPostgresUrl)(
    "a Postgres gateway node gets the cross-node bus, lease locks, a cluster member and the Postgres retry rule",
    async () => {
      const ts = await createTestSchema(testPostgresUrl as string);
      const config = parseConfig({
        ...modelConfig,
        storage: { backend: "postgres", postgres: { url: testPostgresUrl, schema: ts.schema } },
      });
      try {
        const node = await composeNode({
          role: "gateway",
          config,
          stateDir: tempDir(),
          providers: scripted,
          logger: silentLogger,
        });
        try {
          expect(node.backend.kind).toBe("postgres");
          expect(node.runtime.bus).toBeInstanceOf(PgEventBus);
          expect(node.runtime.sessionLocks.kind).toBe("postgres-lease");
          expect(node.service.clusterNode).toBe(node.cluster);
          expect(node.isTransientStoreError(adminShutdown)).toBe(true);
          await node.start();
          await node.crossNode?.ready();
          const accepted = await node.service.accept({
            message: "hi",
            idempotencyKey: "p1",
            sessionKey: "agent:main:p",
          });
          expect((await node.service.final(accepted.runId)).status).toBe("ok");
          // the session was written under this node's lease
          expect(await node.store.getSession("agent:main:p")).toBeDefined();
        } finally {
          await node.close();
        }
      } finally {
        await ts.drop();
      }
    },
  );
});
