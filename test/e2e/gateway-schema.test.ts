/*
 * Wire compatibility: every kind of frame the gateway sends (and what our client sends) validates against the JSON
 * Schema published in @openclaw/gateway-protocol (protocol.schema.json), with ajv (fixtures/gateway/json-schema.ts
 * says how it is set up); the setup is itself checked against negative cases and against the package's own
 * runtime validators where the package exports one.
 *
 * Agent events: the schema's EventFrame leaves `payload` open ({}), so the frames validate as they are. Its
 * AgentEvent definition is closed (additionalProperties:false) and lacks `sessionKey`, which SPEC 11/14 require
 * (OpenClaw's own gateway sends it too). We keep `sessionKey`: the payload must validate as AgentEvent once
 * `sessionKey` is set aside, and `sessionKey` must be the only property the definition does not list.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { GatewayClient } from "../../src/client/gateway-client.js";
import { createDeviceIdentity } from "../../src/protocol/device.js";
import { GATEWAY_EVENTS } from "../../src/protocol/frames.js";
import {
  cronListParamsSchema,
  cronRemoveParamsSchema,
  cronRunParamsSchema,
  parseParams,
} from "../../src/protocol/params.js";
import {
  connectedPeer,
  deferred,
  type Frame,
  isLifecycleEnd,
  RawPeer,
  removeTempDirs,
  startTestGateway,
  TestProvider,
} from "../fixtures/gateway/harness.js";
import { SchemaValidator } from "../fixtures/gateway/json-schema.js";

const require = createRequire(import.meta.url);
const packageEntry = require.resolve("@openclaw/gateway-protocol");
const schemaFile = path.join(path.dirname(packageEntry), "..", "protocol.schema.json");
let v: SchemaValidator;

beforeAll(() => {
  v = new SchemaValidator(JSON.parse(fs.readFileSync(schemaFile, "utf8")) as Record<string, unknown>);
});
afterAll(() => removeTempDirs());

function issues(value: unknown, ref: string): string[] {
  return v.validate(value, ref).map((i) => `${i.path}: ${i.message}`);
}

describe("the schema validator (ajv)", () => {
  it("rejects what the schema forbids (so a passing frame means something)", () => {
    const hello = {
      type: "hello-ok",
      protocol: 4,
      server: { version: "1", connId: "c" },
      features: { methods: [], events: [] },
      snapshot: { presence: [], health: {}, stateVersion: { presence: 0, health: 0 }, uptimeMs: 0 },
      auth: { role: "operator", scopes: [] },
      policy: { maxPayload: 1, maxBufferedBytes: 1, tickIntervalMs: 1 },
    };
    expect(issues(hello, "#/definitions/HelloOk")).toEqual([]);
    const { snapshot: _, ...noSnapshot } = hello;
    expect(issues(noSnapshot, "#/definitions/HelloOk")).toEqual(["$.snapshot: required"]);
    expect(issues({ ...hello, protocol: 4.5 }, "#/definitions/HelloOk")).toEqual(["$.protocol: must be integer"]);
    expect(issues({ ts: "now" }, "#/definitions/TickEvent")).toEqual(["$.ts: must be integer"]);
    expect(issues({ type: "res", id: "1", ok: true, extra: 1 }, "#")).toContain(
      "$: must match exactly one schema in oneOf",
    );
    expect(issues({ type: "event", event: "" }, "#/definitions/EventFrame")).toEqual([
      "$.event: must NOT have fewer than 1 characters",
    ]);
    const chatError = { runId: "r", sessionKey: "s", seq: 1, state: "error", errorKind: "cosmic_rays" };
    expect(issues(chatError, "#/definitions/ChatErrorEvent")).toContain("$.errorKind: must match a schema in anyOf");
  });

  it("agrees with the package's own runtime validators", async () => {
    const pkg = (await import("@openclaw/gateway-protocol")) as unknown as Record<string, (x: unknown) => boolean>;
    const samples: Array<[string, unknown]> = [
      [
        "ConnectParams",
        { minProtocol: 4, maxProtocol: 4, client: { id: "cli", version: "1", platform: "linux", mode: "cli" } },
      ],
      [
        "ConnectParams",
        { minProtocol: 4, maxProtocol: 4, client: { id: "nope", version: "1", platform: "linux", mode: "cli" } },
      ],
      [
        "ConnectParams",
        { minProtocol: 0, maxProtocol: 4, client: { id: "cli", version: "1", platform: "linux", mode: "cli" } },
      ],
      ["AgentParams", { message: "hi", idempotencyKey: "k" }],
      ["AgentParams", { message: "", idempotencyKey: "k" }],
      ["AgentParams", { message: "hi", idempotencyKey: "k", queueMode: "steer" }],
      ["AgentWaitParams", { runId: "r", timeoutMs: 10 }],
      ["AgentWaitParams", { runId: "r", timeoutMs: -1 }],
      ["RequestFrame", { type: "req", id: "1", method: "health" }],
      ["RequestFrame", { type: "req", id: "", method: "health" }],
    ];
    for (const [name, sample] of samples) {
      const theirs = pkg[`validate${name}`](sample);
      const ours = issues(sample, `#/definitions/${name}`).length === 0;
      expect(ours, `${name} ${JSON.stringify(sample)}`).toBe(theirs);
    }
  });
});

describe("gateway frames against protocol.schema.json", () => {
  it("validates every frame type the gateway sends", async () => {
    const abortGate = deferred();
    const provider = new TestProvider(
      (_req, i) =>
        [
          { before: ["Hi ", "there"] },
          // not retryable (a rate limit would be retried and take the next turns)
          { before: ["oops"], error: { kind: "auth" as const, message: "key revoked" } },
          { before: ["long"], gate: abortGate.promise },
          { before: ["chat reply"] },
          // the gateway's default exec policy (allowlist, ask on-miss) asks an operator
          { toolCalls: [{ id: "call_1", name: "exec", arguments: { command: "rm -rf build" } }] },
        ][i] ?? { before: ["more"] },
    );
    const g = await startTestGateway({
      provider,
      gateway: { token: "tok", tickIntervalMs: 25, chatDeltaIntervalMs: 1 },
      // a low warn threshold makes the held run below report itself (the `diagnostic` event); nothing is aborted
      config: {
        diagnostics: { enabled: true, stuckSessionWarnMs: 50, stuckSessionAbortMs: 600_000 },
        // session "budget" pauses for approval once it has spent a token today (budget.approval.* events)
        limits: {
          budgets: [{ scope: "session", match: "agent:main:budget", window: "day", maxTokens: 1, action: "pause" }],
        },
      },
    });
    const refused = await RawPeer.open(g.url);
    await refused.connect({ token: "wrong" });
    const peer = await connectedPeer(g.url, {
      token: "tok",
      device: createDeviceIdentity(),
      client: { deviceFamily: "Desktop" },
    });

    await peer.call("sessions.subscribe", {});
    await peer.call("sessions.messages.subscribe", { key: "schema" });
    const ok = peer.send("agent", { message: "hello", idempotencyKey: "sch-ok", sessionKey: "schema" });
    await peer.response(ok, 2);
    const err = peer.send("agent", { message: "fail", idempotencyKey: "sch-err", sessionKey: "schema" });
    await peer.response(err, 2);
    const long = peer.send("agent", { message: "abort me", idempotencyKey: "sch-abort", sessionKey: "schema" });
    await peer.seen(
      (f) => f.event === "agent" && f.payload?.runId === "sch-abort" && f.payload?.stream === "assistant",
    );
    await peer.seen((f) => f.event === "diagnostic" && f.payload?.runId === "sch-abort", "a diagnostic");
    await peer.call("diagnostics.list");
    await peer.call("chat.abort", { sessionKey: "schema", runId: "sch-abort" });
    await peer.response(long, 2);
    await peer.call("chat.send", { sessionKey: "other", message: "via chat", idempotencyKey: "sch-chat" });
    await peer.seen(isLifecycleEnd("sch-chat"));
    await peer.call("agent.wait", { runId: "sch-ok" });
    await peer.call("agent.wait", { runId: "missing" });
    const replay = await peer.call("agent.events", { runId: "sch-ok" });
    await peer.call("chat.history", { sessionKey: "schema", limit: 2 });
    await peer.call("sessions.list", { limit: 10 });
    await peer.call("sessions.get", { sessionKey: "schema" });
    await peer.call("sessions.reset", { sessionKey: "schema" });
    const del = await peer.call("sessions.delete", { sessionKey: "other" });
    const exec = peer.send("agent", { message: "clean", idempotencyKey: "sch-exec", sessionKey: "approve" });
    const asked = await peer.seen((f) => f.event === "exec.approval.requested");
    const pending = await peer.call("exec.approval.list");
    const resolveParams = { id: String(asked.payload?.id), decision: "deny" };
    await peer.call("exec.approval.resolve", resolveParams);
    await peer.response(exec, 2);
    await peer.response(peer.send("agent", { message: "spend", idempotencyKey: "sch-b1", sessionKey: "budget" }), 2);
    const paused = peer.send("agent", { message: "more", idempotencyKey: "sch-b2", sessionKey: "budget" });
    const budgetAsked = await peer.seen((f) => f.event === "budget.approval.requested");
    await peer.call("budget.approval.list");
    await peer.call("budget.approval.resolve", { id: String(budgetAsked.payload?.id), decision: "allow-once" });
    await peer.response(paused, 2);
    await peer.call("usage.summary", { by: "session" });
    await peer.call("health");
    const auditParams = { sessionKey: "schema", limit: 5 };
    const audit = await peer.call("audit.list", auditParams);
    await peer.call("no.such.method");
    await peer.call("agent", { message: 1 });
    peer.sendRaw("{bad");
    await peer.seen((f) => f.type === "res" && f.id === "unknown");
    await peer.seen((f) => f.event === "tick");
    await g.gw.close();
    await peer.seen((f) => f.event === "shutdown");
    await peer.closed;

    const frames: Frame[] = [...refused.frames, ...peer.frames];
    // the scenario covered every event and every method
    const events = new Set(frames.filter((f) => f.type === "event").map((f) => f.event));
    expect([...events].sort()).toEqual([...GATEWAY_EVENTS].sort());
    const chatStates = new Set(frames.filter((f) => f.event === "chat").map((f) => f.payload?.state));
    expect([...chatStates].sort()).toEqual(["aborted", "delta", "error", "final"]);

    for (const f of frames) {
      expect(issues(f, "#"), JSON.stringify(f).slice(0, 300)).toEqual([]);
      if (f.type === "event") {
        const p = f.payload;
        switch (f.event) {
          case "connect.challenge":
            // no published definition: { nonce, ts } as SPEC 14 says
            expect(Object.keys(p ?? {}).sort()).toEqual(["nonce", "ts"]);
            expect(typeof p?.nonce).toBe("string");
            expect(Number.isInteger(p?.ts)).toBe(true);
            break;
          case "tick":
            expect(issues(p, "#/definitions/TickEvent")).toEqual([]);
            break;
          case "shutdown":
            expect(issues(p, "#/definitions/ShutdownEvent")).toEqual([]);
            break;
          case "chat":
            expect(issues(p, "#/definitions/ChatEvent"), JSON.stringify(p).slice(0, 300)).toEqual([]);
            break;
          case "exec.approval.requested": {
            // no published event definition: its fields carry ExecApprovalRequestParams' names and types; reason, the
            // times and `sandbox` (whether the run is sandboxed, why the policy asks) are Loopgate's additions
            const { reason, createdAtMs, expiresAtMs, sandbox, ...request } = p as Record<string, unknown>;
            expect(issues(request, "#/definitions/ExecApprovalRequestParams")).toEqual([]);
            expect([typeof reason, typeof createdAtMs, typeof expiresAtMs]).toEqual(["string", "number", "number"]);
            expect(sandbox).toEqual({ sandboxed: false, reason: expect.stringMatching(/^not sandboxed \(/) });
            break;
          }
          case "exec.approval.resolved":
            expect(p).toMatchObject({ id: asked.payload?.id, status: "denied", decision: "deny", reason: "user" });
            break;
          case "budget.approval.requested":
            // no published definition (OpenClaw has no budgets): our one shape, protocol/budget-approvals.ts
            expect(p).toMatchObject({ budget: "limits.budgets.0", runId: "sch-b2", unit: "tokens", limit: 1 });
            break;
          case "budget.approval.resolved":
            expect(p).toMatchObject({ id: budgetAsked.payload?.id, status: "allowed", decision: "allow-once" });
            break;
          case "sessions.changed":
            // no published event definition: the session it carries is an OpenClaw SessionRow
            expect(["created", "reset", "deleted", "patched", "status"]).toContain(p?.reason);
            if (p?.session !== undefined) expect(issues(p.session, "#/definitions/SessionRow")).toEqual([]);
            break;
          case "session.message":
            // no published event definition: `key` as the sessions.* methods name it, the message in chat.history's shape
            expect(issues({ key: p?.key }, "#/definitions/SessionsMessagesSubscribeParams")).toEqual([]);
            expect(["user", "assistant", "toolResult"]).toContain((p?.message as { role?: string })?.role);
            break;
          case "agent": {
            const { sessionKey, ...rest } = p as Record<string, unknown>;
            expect(typeof sessionKey === "string" && sessionKey.length > 0).toBe(true);
            expect(issues(rest, "#/definitions/AgentEvent"), JSON.stringify(p).slice(0, 300)).toEqual([]);
            expect(issues(p, "#/definitions/AgentEvent")).toEqual(["$.sessionKey: unexpected property"]);
            break;
          }
          case "diagnostic":
            // no published definition (OpenClaw has no such event): our one shape, protocol/diagnostics.ts
            expect(p).toMatchObject({ type: expect.stringMatching(/^session\./), sessionKey: expect.any(String) });
            expect(Number.isInteger(p?.ts)).toBe(true);
            break;
          default:
            throw new Error(`unexpected event ${f.event}`);
        }
      }
    }
    const hello = peer.frames.find((f) => f.type === "res" && (f.payload as { type?: string })?.type === "hello-ok");
    expect(issues(hello?.payload, "#/definitions/HelloOk")).toEqual([]);
    expect(issues(del.payload, "#/definitions/SessionsDeleteResult")).toEqual([]);
    // agent.events (no OpenClaw method of that name) replays agent events: each as the live ones validate
    const replayed = (replay.payload as { events: Array<Record<string, unknown>> }).events;
    expect(replayed.length).toBeGreaterThan(2);
    for (const { sessionKey: _, ...rest } of replayed) expect(issues(rest, "#/definitions/AgentEvent")).toEqual([]);
    expect(issues(resolveParams, "#/definitions/ExecApprovalResolveParams")).toEqual([]);
    // audit.list takes OpenClaw's AuditListParams names; its rows share AuditEvent's names where they carry the
    // same thing, and differ where Loopgate records more: actor is who started the run (a string, not {type, id}),
    // `code` / `toolCallFingerprint` / `schemaVersion` are its own, and rows carry no agentId
    expect(issues(auditParams, "#/definitions/AuditListParams")).toEqual([]);
    const auditEvents = (audit.payload as { events: Array<Record<string, unknown>> }).events;
    expect(auditEvents.length).toBeGreaterThan(0);
    for (const e of auditEvents) {
      const { actor, code, toolCallFingerprint, schemaVersion, ...shared } = e;
      expect(
        issues({ ...shared, actor: { type: "system", id: actor }, agentId: "main" }, "#/definitions/AuditEvent"),
      ).toEqual([]);
    }
    expect((pending.payload as { approvals: unknown[] }).approvals).toEqual([asked.payload]);
    const errors = frames.filter((f) => f.type === "res" && !f.ok);
    expect(errors.map((f) => f.error?.code).sort()).toEqual(
      ["invalid_params", "invalid_request", "not_found", "unauthorized", "unknown_method"].sort(),
    );
    for (const e of errors) expect(issues(e.error, "#/definitions/ErrorShape")).toEqual([]);
  });

  it("validates what our client sends: connect and agent requests", async () => {
    // a stand-in gateway that records the client's frames and answers just enough
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise((r) => wss.once("listening", r));
    const received: Array<Record<string, unknown>> = [];
    wss.on("connection", (ws) => {
      ws.send(JSON.stringify({ type: "event", event: "connect.challenge", payload: { nonce: "n-1", ts: 1 }, seq: 1 }));
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data)) as { id: string; method: string; params: Record<string, unknown> };
        received.push(frame);
        if (frame.method === "connect") {
          ws.send(
            JSON.stringify({
              type: "res",
              id: frame.id,
              ok: true,
              payload: {
                type: "hello-ok",
                protocol: 4,
                policy: { maxPayload: 1, maxBufferedBytes: 1, tickIntervalMs: 60000 },
              },
            }),
          );
        } else if (frame.method === "agent") {
          const runId = frame.params.idempotencyKey;
          ws.send(JSON.stringify({ type: "res", id: frame.id, ok: true, payload: { runId, status: "accepted" } }));
          ws.send(
            JSON.stringify({
              type: "res",
              id: frame.id,
              ok: true,
              payload: { runId, status: "ok", summary: "completed" },
            }),
          );
        }
      });
    });
    const port = (wss.address() as { port: number }).port;
    const client = await GatewayClient.connect({
      url: `ws://127.0.0.1:${port}`,
      token: "tok",
      device: createDeviceIdentity(),
      scopes: ["operator.admin"],
      client: { id: "cli", mode: "cli", deviceFamily: "desktop" },
    });
    await client.agent({ message: "hi", idempotencyKey: "k-1", sessionKey: "s", thinking: "low", timeout: 30 });
    await client.close();
    await new Promise((r) => wss.close(r));

    const pkg = (await import("@openclaw/gateway-protocol")) as unknown as Record<string, (x: unknown) => boolean>;
    const [connect, agent] = received;
    expect(connect).toMatchObject({ type: "req", method: "connect" });
    expect(issues(connect, "#/definitions/RequestFrame")).toEqual([]);
    expect(issues(connect.params, "#/definitions/ConnectParams")).toEqual([]);
    expect(pkg.validateConnectParams(connect.params)).toBe(true);
    expect((connect.params as { device: { nonce: string } }).device.nonce).toBe("n-1");
    expect(issues(agent, "#/definitions/RequestFrame")).toEqual([]);
    expect(issues(agent.params, "#/definitions/AgentParams")).toEqual([]);
    expect(pkg.validateAgentParams(agent.params)).toBe(true);
  });

  it("cron.list, cron.remove and cron.run take OpenClaw's params (cron.add is Loopgate's flat job)", () => {
    // what `loopgate cron` sends validates against OpenClaw's schema
    expect(issues({}, "#/definitions/CronListParams")).toEqual([]);
    expect(issues({ id: "nightly" }, "#/definitions/CronRemoveParams")).toEqual([]);
    expect(issues({ id: "nightly" }, "#/definitions/CronRunParams")).toEqual([]);
    // and what an OpenClaw client sends is accepted (its list filters and run mode are ignored)
    expect(parseParams(cronListParamsSchema, { includeDisabled: true, sortBy: "name" }).ok).toBe(true);
    expect(parseParams(cronRemoveParamsSchema, { jobId: "nightly" })).toEqual({ ok: true, value: { id: "nightly" } });
    expect(parseParams(cronRunParamsSchema, { id: "nightly", mode: "force" })).toEqual({
      ok: true,
      value: { id: "nightly" },
    });
    expect(parseParams(cronRunParamsSchema, {})).toMatchObject({
      ok: false,
      error: { message: "params.id: required" },
    });
  });
});
