/*
 * The audit ledger as an operator meets it: real gateways (in-process for the queue and actor cases, a real
 * `loopgate gateway` child for the CLI), real WebSockets, the OpenAI Chat Completions provider against the fake model
 * server calling a real tool, and the real SQLite file afterwards. Run `npm run build` first (the CLI case).
 */
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDeviceIdentity } from "../../src/protocol/device.js";
import type { AuditEvent, AuditListResult, HealthResult } from "../../src/protocol/payloads.js";
import { SqliteStore } from "../../src/storage/sqlite-store.js";
import { type FakeModelServer, openAIErrorTurn, startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { ManualClock } from "../../src/testing/manual-clock.js";
import { cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";
import { connectedPeer, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();
useCliSandboxes();

let server: FakeModelServer;
beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());

const actions = (events: AuditEvent[]) => events.map((e) => `${e.action} ${e.status}${e.code ? `(${e.code})` : ""}`);

describe("audit ledger through the gateway", () => {
  it("audit.queueSize bounds the write queue: rows beyond it are dropped, counted in health and audit.list", async () => {
    // the ledger writes on the gateway's clock: with it stopped, nothing leaves the queue until audit.list flushes it
    const clock = new ManualClock(Date.now());
    const { url } = await gateway({ config: { audit: { queueSize: 1 } }, gateway: { clock } });
    const peer = await connectedPeer(url, { scopes: ["operator.read", "operator.write"] });
    const id = peer.send("agent", { message: "hello", idempotencyKey: "q-1" });
    expect((await peer.response(id, 2)).payload).toMatchObject({ status: "ok" });

    const health = (await peer.call("health")).payload as unknown as HealthResult;
    expect(health.audit).toEqual({ backlog: 1, dropped: 1 });
    const list = (await peer.call("audit.list")).payload as unknown as AuditListResult;
    expect(actions(list.events)).toEqual(["agent.run.started started"]);
    expect(list.dropped).toBe(1);
    expect(((await peer.call("health")).payload as unknown as HealthResult).audit).toEqual({ backlog: 0, dropped: 1 });
    peer.close();
  });

  it("rows still queued when the gateway stops are written before it closes the store", async () => {
    const clock = new ManualClock(Date.now());
    const g = await gateway({ gateway: { clock } });
    const peer = await connectedPeer(g.url, { scopes: ["operator.read", "operator.write"] });
    await peer.response(peer.send("agent", { message: "hello", idempotencyKey: "late-1" }), 2);
    expect(((await peer.call("health")).payload as unknown as HealthResult).audit).toEqual({ backlog: 2, dropped: 0 });
    await g.gw.close();
    const store = new SqliteStore(path.join(g.stateDir, "loopgate.sqlite"));
    const rows = store.listAuditEvents({ limit: 10 }).map((e) => e.action);
    store.close();
    expect(rows).toEqual(["agent.run.finished", "agent.run.started"]);
  });

  it("names who started each run: a verified device as device:<id>, any other client by its client id", async () => {
    const { url } = await gateway();
    const device = createDeviceIdentity();
    const phone = await connectedPeer(url, { device, client: { id: "openclaw-ios" } });
    const bridge = await connectedPeer(url, { client: { id: "support-bridge" } });
    await phone.response(phone.send("agent", { message: "hi", idempotencyKey: "from-phone" }), 2);
    await bridge.response(bridge.send("agent", { message: "hi", idempotencyKey: "from-bridge" }), 2);

    const rows = async (runId: string) =>
      ((await bridge.call("audit.list", { runId })).payload as unknown as AuditListResult).events;
    expect(new Set((await rows("from-phone")).map((e) => e.actor))).toEqual(new Set([`device:${device.id}`]));
    expect(new Set((await rows("from-bridge")).map((e) => e.actor))).toEqual(new Set(["support-bridge"]));
    const byActor = await bridge.call("audit.list", { actor: "support-bridge", action: "agent.run.finished" });
    expect((byActor.payload as unknown as AuditListResult).events.map((e) => e.runId)).toEqual(["from-bridge"]);
    const bad = await bridge.call("audit.list", { limit: 501 });
    expect(bad.error).toMatchObject({ code: "invalid_params" });
    expect(bad.error?.message).toContain("params.limit");
    for (const p of [phone, bridge]) p.close();
  });
});

describe("loopgate audit", () => {
  it("an embedded run (agent --local) is audited too, under the actor cli, before the command exits", async () => {
    const s = cliSandbox({ prefix: "audit-local" });
    const r = await s.agent(["--local", "--message", "hello"]).done;
    expect(r.code, r.stderr).toBe(0);
    const db = new Database(path.join(s.tmp, "state", "loopgate.sqlite"), { readonly: true });
    const rows = db.prepare("SELECT action, status, actor FROM audit_events ORDER BY seq").all();
    db.close();
    expect(rows).toEqual([
      { action: "agent.run.started", status: "started", actor: "cli" },
      { action: "agent.run.finished", status: "succeeded", actor: "cli" },
    ]);
  });

  const SECRETS = {
    prompt: "PROMPT-SECRET-7d1e",
    args: "ARGS-SECRET-93fa",
    result: "RESULT-SECRET-51c0",
    toolError: "TOOLERR-SECRET-0b2d",
    runError: "RUNERR-SECRET-c4a8",
  };

  it("--json after a run with secrets in the prompt, tool args, tool result and errors: the rows, and no secret in the ledger", async () => {
    const s = cliSandbox({ prefix: "audit" });
    const workspace = path.join(s.tmp, "workspace");
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(workspace, `notes-${SECRETS.args}.txt`), `the code is ${SECRETS.result}\n`);
    fs.writeFileSync(
      s.config,
      JSON.stringify({
        agents: { defaults: { model: { primary: "fake/m" }, workspace } },
        models: {
          providers: {
            fake: { api: "openai-completions", baseUrl: server.baseUrl, apiKey: "sk-test", models: [{ id: "m" }] },
          },
        },
      }),
    );
    server.enqueue(
      {
        toolCalls: [
          { id: "call_notes", name: "read", arguments: { path: `notes-${SECRETS.args}.txt` } },
          { id: "call_missing", name: "read", arguments: { path: `missing-${SECRETS.toolError}.txt` } },
        ],
      },
      openAIErrorTurn(400, `this request is invalid: ${SECRETS.runError}`),
    );
    const gw = await s.gateway();
    const agent = await s.agent(["--url", gw.url, "--message", `read my notes, ${SECRETS.prompt}`]).done;
    expect(agent.code).not.toBe(0);
    // the model saw the tool result: the secrets did pass through this run
    expect(JSON.stringify(server.requests.at(-1)?.body)).toContain(SECRETS.result);

    const audit = await s.run(["audit", "--config", s.config, "--url", gw.url, "--json", "--since", "1h"]).done;
    expect(audit.code, audit.stderr).toBe(0);
    const out = JSON.parse(audit.stdout) as AuditListResult;
    // the two reads run side by side: their ends may come in either order
    const rows = actions(out.events);
    expect(rows[0]).toBe("agent.run.started started");
    expect(rows.slice(1, 5).sort()).toEqual([
      "tool.action.finished failed(error)",
      "tool.action.finished succeeded(ok)",
      "tool.action.started started",
      "tool.action.started started",
    ]);
    expect(rows.slice(5)).toEqual(["agent.run.finished failed(unknown)"]);
    expect(new Set(out.events.map((e) => e.actor))).toEqual(new Set(["cli"]));
    expect(new Set(out.events.map((e) => e.sessionKey))).toEqual(new Set(["agent:main:main"]));
    expect(out.events.every((e) => e.redaction === "metadata_only")).toBe(true);
    expect(out.dropped).toBe(0);
    for (const secret of Object.values(SECRETS)) expect(audit.stdout).not.toContain(secret);

    const text = await s.run(["audit", "--config", s.config, "--url", gw.url, "--session", "main"]).done;
    expect(text.stdout.trim().split("\n")).toHaveLength(6);
    expect(text.stdout).toMatch(/tool\.action\.finished read#[0-9a-f]{16} {2}failed\(error\) {2}run=\S+ {2}actor=cli/);
    const none = await s.run(["audit", "--config", s.config, "--url", gw.url, "--session", "elsewhere"]).done;
    expect(none.stdout).toBe("");
    const badSince = await s.run(["audit", "--config", s.config, "--url", gw.url, "--since", "yesterday"]).done;
    expect(badSince.code).toBe(2);
    expect(badSince.stderr).toContain("--since: expected an ISO time");

    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
    // The whole ledger, as bytes on disk: a copy of the database with every other table dropped and vacuumed.
    const file = path.join(s.tmp, "state", "loopgate.sqlite");
    const copy = path.join(s.tmp, "ledger-only.sqlite");
    const original = new Database(file, { readonly: true });
    const stored = JSON.stringify(original.prepare("SELECT params, error FROM runs").all());
    original.close();
    // the run record does hold the prompt and the error: they reached the database, just not the ledger
    expect(stored).toContain(SECRETS.prompt);
    expect(stored).toContain(SECRETS.runError);
    fs.copyFileSync(file, copy);
    const db = new Database(copy);
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as Array<{ name: string }>;
    for (const { name } of tables) if (name !== "audit_events") db.exec(`DROP TABLE ${name}`);
    expect((db.prepare("SELECT count(*) AS n FROM audit_events").get() as { n: number }).n).toBe(6);
    db.exec("VACUUM");
    db.close();
    const bytes = fs.readFileSync(copy).toString("latin1");
    expect(bytes).toContain("tool.action.finished");
    for (const secret of Object.values(SECRETS)) expect(bytes).not.toContain(secret);
  });
});
