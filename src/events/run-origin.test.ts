import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentService } from "../agent/service.js";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { sqliteRuntime } from "../node/compose.js";
import { agentParamsSchema, parseParams } from "../protocol/params.js";
import { ScriptedProvider } from "../providers/scripted.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { AuditLedger } from "./audit-ledger.js";

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A real runtime and service over a real SQLite file, with the audit ledger attached as the gateway does. */
function open(dir?: string) {
  const stateDir = dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "lg-origin-"));
  if (!dir) dirs.push(stateDir);
  const store = new SqliteStore(path.join(stateDir, "loopgate.sqlite"));
  stores.push(store);
  const rt = sqliteRuntime({
    config: parseConfig({ agents: { defaults: { model: { primary: "s/m" } } } }),
    stateDir,
    store: new SqliteStoreAdapter(store),
    logger: silentLogger,
    providers: { s: new ScriptedProvider("s", () => ({ text: "done" })) },
  });
  const service = new AgentService(rt);
  const ledger = new AuditLedger({
    store: new SqliteStoreAdapter(store),
    clock: rt.clock,
    logger: silentLogger,
    queueSize: 100,
    actorOf: (runId) => service.originOf(runId)?.actor,
  });
  ledger.attach(rt.bus);
  const rows = async (runId: string) => {
    await ledger.flush();
    return store
      .listAuditEvents({ runId, limit: 100 })
      .reverse()
      .map((r) => [r.action, r.status, r.actor]);
  };
  return { stateDir, store, service, rows };
}

describe("who started a run", () => {
  it("a run accepted with an origin keeps it in its record, and every audit row of the run names that actor", async () => {
    const h = open();
    await h.service.accept({ message: "nightly report", idempotencyKey: "job-1" }, { actor: "cron:nightly" });
    await h.service.final("job-1");
    expect(h.store.getRun("job-1")?.params.origin).toEqual({ actor: "cron:nightly" });
    expect(await h.rows("job-1")).toEqual([
      ["agent.run.started", "started", "cron:nightly"],
      ["agent.run.finished", "succeeded", "cron:nightly"],
    ]);
  });

  it("after a restart, a queued run runs under the actor that sent it, and an interrupted one fails under its own", async () => {
    const first = open();
    first.store.ensureSession("agent:main:main", "main", 1);
    const params = (runId: string, actor: string) => ({
      message: "hello",
      idempotencyKey: runId,
      sessionKey: "agent:main:main",
      agentId: "main",
      origin: { actor },
    });
    // what a gateway that died mid-run leaves behind
    first.store.createRun({
      runId: "was-running",
      sessionKey: "agent:main:main",
      status: "running",
      acceptedAt: 1,
      startedAt: 2,
      params: params("was-running", "cli"),
    });
    first.store.createRun({
      runId: "was-queued",
      sessionKey: "agent:main:main",
      status: "queued",
      acceptedAt: 3,
      params: params("was-queued", "device:abc123"),
    });
    first.store.close();

    const second = open(first.stateDir);
    expect(await second.service.recover()).toEqual({ failed: ["was-running"], requeued: ["was-queued"] });
    await second.service.final("was-queued");
    expect(await second.rows("was-running")).toEqual([["agent.run.finished", "failed", "cli"]]);
    expect(await second.rows("was-queued")).toEqual([
      ["agent.run.started", "started", "device:abc123"],
      ["agent.run.finished", "succeeded", "device:abc123"],
    ]);
  });

  it("a client cannot claim an origin: `origin` is not an agent param", () => {
    const parsed = parseParams(agentParamsSchema, { message: "x", idempotencyKey: "k", origin: { actor: "cli" } });
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? "" : parsed.error.message).toContain("params.origin: unknown field");
  });
});
