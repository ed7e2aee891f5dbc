/*
 * Issue 16, must-haves 3-6: the whole OpenClaw method surface. Every method the published schema defines is either
 * answered (and then its params and results validate against the schema's definitions, where it has them) or
 * refused as `unsupported`, naming the method, with a schema-valid error, on a connection that keeps working.
 * hello-ok.features lists exactly what is answered.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENCLAW_METHODS } from "../../src/protocol/openclaw-methods.js";
import { connectedPeer, isLifecycleEnd, removeTempDirs, startTestGateway } from "../fixtures/gateway/harness.js";
import { SchemaValidator } from "../fixtures/gateway/json-schema.js";

const require = createRequire(import.meta.url);
const schemaFile = path.join(path.dirname(require.resolve("@openclaw/gateway-protocol")), "..", "protocol.schema.json");
let schema: { methods: Record<string, unknown> } & Record<string, unknown>;
let v: SchemaValidator;
beforeAll(() => {
  schema = JSON.parse(fs.readFileSync(schemaFile, "utf8"));
  v = new SchemaValidator(schema);
});
afterAll(() => removeTempDirs());

function issues(value: unknown, def: string): string[] {
  return v.validate(value, `#/definitions/${def}`).map((i) => `${i.path}: ${i.message}`);
}

type Case = {
  method: string;
  params: Record<string, unknown>;
  /** the schema's definition of the params, when it has one */
  paramsDef?: string;
  /** the schema's definition of the result, when it has one */
  resultDef?: string;
  /** what else the answer must show */
  check?: (payload: Record<string, unknown>) => unknown;
};

describe("the OpenClaw method surface", () => {
  it("carries the name of every method the published schema defines", () => {
    expect([...OPENCLAW_METHODS]).toEqual(Object.keys(schema.methods));
  });

  it("answers every method it advertises and refuses every other schema method as unsupported, naming it", async () => {
    const g = await startTestGateway();
    const peer = await connectedPeer(g.url);
    const hello = peer.frames.find((f) => f.type === "res" && f.ok);
    const features = hello?.payload?.features as { methods: string[]; events: string[] };
    const served = new Set(features.methods);
    const unsupported = Object.keys(schema.methods).filter((m) => !served.has(m) && m !== "connect");
    for (const method of unsupported) {
      const res = await peer.call(method, {});
      expect(res.error?.code, method).toBe("unsupported");
      expect(res.error?.message).toContain(method);
      expect(issues(res.error, "ErrorShape")).toEqual([]);
    }
    // the connection kept working, and a name outside the protocol is still an unknown method
    expect((await peer.call("health")).ok).toBe(true);
    expect((await peer.call("no.such.method")).error?.code).toBe("unknown_method");
    for (const method of features.methods) {
      expect((await peer.call(method, {})).error?.code ?? "answered", method).not.toMatch(
        /^(unsupported|unknown_method)$/,
      );
    }
    console.info(
      `schema methods: ${Object.keys(schema.methods).length}; answered: ${served.size} (${[...served].filter((m) => OPENCLAW_METHODS.has(m)).length} of them in the schema); unsupported: ${unsupported.length}`,
    );
    peer.close();
    await g.gw.close();
  });

  it("validates the params and results of each answered method against the schema's definitions", async () => {
    const g = await startTestGateway({
      config: {
        gateway: { auth: { token: "admin-secret" } },
        models: {
          providers: {
            cloud: {
              api: "openai-completions",
              baseUrl: "http://127.0.0.1:9/v1",
              apiKey: "sk-secret-123",
              headers: { Authorization: "Bearer header-secret" },
              models: [{ id: "gpt-x", name: "GPT X", contextWindow: 64000 }],
            },
          },
        },
      },
    });
    const { dir } = await g.gw.service.rt.workspaceFor("main");
    fs.writeFileSync(
      path.join(dir, "IDENTITY.md"),
      "# Identity\n\n- **Name:** Clawd\n- Emoji: 🦞\n- Avatar: avatars/c.png\n",
    );
    const peer = await connectedPeer(g.url, { token: "admin-secret" });
    await peer.call("sessions.subscribe", {});
    const run = peer.send("chat.send", { sessionKey: "seed", message: "first words here", idempotencyKey: "seed-1" });
    await peer.response(run, 1);
    await peer.seen(isLifecycleEnd("seed-1"));

    const cases: Case[] = [
      // unsubscribed, then subscribed again: the changes below still arrive (checked after the table)
      { method: "sessions.unsubscribe", params: {} },
      { method: "sessions.subscribe", params: {} },
      { method: "sessions.messages.subscribe", params: { key: "seed" }, paramsDef: "SessionsMessagesSubscribeParams" },
      {
        method: "sessions.messages.unsubscribe",
        params: { key: "seed" },
        paramsDef: "SessionsMessagesUnsubscribeParams",
      },
      {
        method: "sessions.observer.visibility",
        params: { visible: false },
        paramsDef: "SessionsObserverVisibilityParams",
        resultDef: "SessionsObserverVisibilityResult",
      },
      {
        method: "sessions.create",
        params: { key: "made", label: "Made", model: "t/m", thinkingLevel: "low" },
        paramsDef: "SessionsCreateParams",
        resultDef: "SessionsCreateResult",
        check: (p) => expect(p.entry).toMatchObject({ label: "Made", model: "t/m", thinkingLevel: "low" }),
      },
      {
        method: "sessions.create",
        params: { key: "made-run", message: "go", idempotencyKey: "create-run" },
        paramsDef: "SessionsCreateParams",
        resultDef: "SessionsCreateResult",
        check: (p) => expect(p).toMatchObject({ runStarted: true, runId: "create-run" }),
      },
      {
        method: "sessions.resolve",
        params: { label: "Made" },
        paramsDef: "SessionsResolveParams",
        resultDef: "SessionsResolveResult",
        check: (p) => expect(p).toMatchObject({ ok: true, key: "agent:main:made" }),
      },
      {
        method: "sessions.resolve",
        params: { key: "missing", allowMissing: true },
        paramsDef: "SessionsResolveParams",
        resultDef: "SessionsResolveResult",
        check: (p) => expect(p.ok).toBe(false),
      },
      {
        method: "sessions.describe",
        params: { key: "seed", includeDerivedTitles: true, includeLastMessage: true },
        paramsDef: "SessionsDescribeParams",
        check: (p) => {
          expect(issues(p.session, "SessionRow")).toEqual([]);
          expect(p.session).toMatchObject({ derivedTitle: "first words here" });
          expect(p.lastMessagePreview).toBe("reply to first words here");
        },
      },
      {
        method: "sessions.list",
        params: {
          includeGlobal: false,
          includeUnknown: true,
          configuredAgentsOnly: true,
          includeDerivedTitles: true,
          limit: 10,
        },
        paramsDef: "SessionsListParams",
        check: (p) => {
          const rows = p.sessions as Array<Record<string, unknown>>;
          for (const r of rows) expect(issues(r, "SessionRow")).toEqual([]);
          expect(rows.find((r) => r.key === "agent:main:seed")?.derivedTitle).toBe("first words here");
          // OpenClaw's Control UI reads defaults from every answer (regression: without it its chat view threw)
          expect(p.defaults).toEqual({
            modelProvider: expect.any(String),
            model: expect.any(String),
            contextTokens: expect.any(Number),
          });
        },
      },
      {
        method: "sessions.list",
        params: { spawnedBy: "agent:main:seed" },
        paramsDef: "SessionsListParams",
        check: (p) => expect(p.sessions).toEqual([]),
      },
      {
        method: "sessions.patch",
        params: { key: "made", model: "cloud/gpt-x", thinkingLevel: "high", verboseLevel: "full", label: null },
        paramsDef: "SessionsPatchParams",
        check: (p) => {
          expect(issues(p.session, "SessionRow")).toEqual([]);
          expect(p.session).toMatchObject({ model: "cloud/gpt-x", modelProvider: "cloud", verboseLevel: "full" });
          expect(p.session).not.toHaveProperty("label");
        },
      },
      {
        method: "chat.startup",
        params: { sessionKey: "seed" },
        // a chat.history page with the session beside it: OpenClaw's Control UI reads messages and sessionInfo
        check: (p) => {
          expect((p.messages as Array<{ role?: string }>)[0]?.role).toBe("user");
          expect(p.sessionInfo).toMatchObject({ key: expect.stringContaining("seed") });
        },
      },
      {
        method: "chat.metadata",
        params: { sessionKey: "seed" },
        paramsDef: "ChatMetadataParams",
        check: (p) => expect(issues(p.agent, "AgentIdentityResult")).toEqual([]),
      },
      {
        method: "chat.send",
        params: {
          sessionKey: "seed",
          message: "every param",
          idempotencyKey: "every-param",
          thinking: "low",
          deliver: false,
          queueMode: "followup",
          timeoutMs: 30000,
          fastMode: false,
          originatingChannel: "webchat",
          suppressCommandInterpretation: false,
          attachments: [],
        },
        paramsDef: "ChatSendParams",
        // timeoutMs becomes the run's timeout
        check: async () =>
          expect((await g.gw.service.rt.store.getRun("every-param"))?.params).toMatchObject({ timeout: 30 }),
      },
      {
        method: "chat.history",
        params: { sessionKey: "seed", limit: 20, maxChars: 10000 },
        paramsDef: "ChatHistoryParams",
        check: (p) => expect((p.messages as Array<{ role?: string }>)[0]?.role).toBe("user"),
      },
      { method: "agents.list", params: {}, paramsDef: "AgentsListParams", resultDef: "AgentsListResult" },
      {
        method: "agent.identity.get",
        params: { agentId: "main" },
        paramsDef: "AgentIdentityParams",
        resultDef: "AgentIdentityResult",
        check: (p) => expect(p).toMatchObject({ name: "Clawd", emoji: "🦞", avatar: "avatars/c.png" }),
      },
      {
        method: "models.list",
        params: { view: "configured" },
        paramsDef: "ModelsListParams",
        resultDef: "ModelsListResult",
        check: (p) => expect(p.models).toContainEqual(expect.objectContaining({ id: "gpt-x", provider: "cloud" })),
      },
      {
        method: "models.authStatus",
        params: {},
        paramsDef: "ModelsAuthStatusParams",
        check: (p) =>
          expect(p.providers).toEqual([
            { provider: "cloud", api: "openai-completions", configured: true, source: "config" },
          ]),
      },
      { method: "status", params: {}, check: (p) => expect(p).toMatchObject({ ok: true, defaultAgentId: "main" }) },
      { method: "update.status", params: {}, paramsDef: "UpdateStatusParams", resultDef: "UpdateStatusResult" },
      {
        method: "commands.list",
        params: { scope: "text" },
        paramsDef: "CommandsListParams",
        resultDef: "CommandsListResult",
        check: (p) =>
          expect((p.commands as Array<{ name: string }>).map((c) => c.name)).toEqual([
            "new",
            "reset",
            "stop",
            "compact",
          ]),
      },
      {
        method: "config.get",
        params: {},
        paramsDef: "ConfigGetParams",
        check: (p) => {
          const text = JSON.stringify(p);
          for (const secret of ["sk-secret-123", "header-secret", "admin-secret"]) expect(text).not.toContain(secret);
          expect(p.redacted).toEqual(
            expect.arrayContaining([
              "gateway.auth.token",
              "models.providers.cloud.apiKey",
              "models.providers.cloud.headers",
            ]),
          );
        },
      },
      { method: "cron.status", params: {}, paramsDef: "CronStatusParams" },
      { method: "cron.list", params: {}, paramsDef: "CronListParams" },
      { method: "exec.approval.list", params: {}, check: (p) => expect(p.approvals).toEqual([]) },
      { method: "plugin.approval.list", params: {}, check: (p) => expect(p.approvals).toEqual([]) },
      { method: "question.list", params: {}, paramsDef: "QuestionListParams", resultDef: "QuestionListResult" },
    ];
    const methods = new Set<string>();
    for (const c of cases) {
      if (c.paramsDef) expect(issues(c.params, c.paramsDef), `${c.method} params`).toEqual([]);
      const res = await peer.call(c.method, c.params);
      expect(res.ok, `${c.method} ${JSON.stringify(res.error)}`).toBe(true);
      const payload = (res.payload ?? {}) as Record<string, unknown>;
      if (c.resultDef) expect(issues(payload, c.resultDef), `${c.method} result`).toEqual([]);
      await c.check?.(payload);
      methods.add(c.method);
    }
    // the patched model, thinking and verbose levels are what the session's next run uses
    const made = await g.gw.service.session("agent:main:made");
    expect(made).toMatchObject({ modelOverride: "cloud/gpt-x", thinking: "high", verboseLevel: "full" });
    const changed = peer.frames.filter((f) => f.event === "sessions.changed").map((f) => f.payload?.reason);
    expect(new Set(changed)).toEqual(new Set(["status", "created", "patched"]));
    console.info(`schema-validated cases: ${cases.length} over ${methods.size} methods`);
    peer.close();
    await g.gw.close();
  });

  it("delivers sessions.changed and session.message only for sessions the token grants (SPEC 21)", async () => {
    const tokens = [{ token: "tenant", scopes: ["operator.read"], sessions: ["agent:main:support-*"] }];
    const g = await startTestGateway({ config: { gateway: { auth: { token: "root", tokens } } } });
    const tenant = await connectedPeer(g.url, { token: "tenant" });
    const root = await connectedPeer(g.url, { token: "root" });
    await tenant.call("sessions.subscribe", {});
    await tenant.call("sessions.messages.subscribe", { key: "support-1" });
    for (const [sessionKey, id] of [
      ["sales-1", "r-sales"],
      ["support-1", "r-support"],
    ]) {
      await root.response(root.send("agent", { message: `hi ${sessionKey}`, idempotencyKey: id, sessionKey }), 2);
    }
    // frames on one socket keep their order: what was sent before this answer has arrived
    await tenant.call("health");
    const changed = tenant.all((f) => f.event === "sessions.changed");
    expect(new Set(changed.map((f) => f.payload?.sessionKey))).toEqual(new Set(["agent:main:support-1"]));
    // the first message created the session; its run started and ended
    expect(changed.map((f) => f.payload?.reason)).toEqual(["created", "status", "status"]);
    const messages = tenant.all((f) => f.event === "session.message");
    expect(messages.map((f) => (f.payload?.message as { role?: string } | undefined)?.role)).toEqual([
      "user",
      "assistant",
    ]);
    expect(messages.every((f) => f.payload?.sessionKey === "agent:main:support-1")).toBe(true);
    // after unsubscribing, nothing more
    await tenant.call("sessions.unsubscribe", {});
    await tenant.call("sessions.messages.unsubscribe", { key: "support-1" });
    const before = tenant.frames.length;
    await root.response(root.send("agent", { message: "again", idempotencyKey: "r-2", sessionKey: "support-1" }), 2);
    await tenant.call("health");
    const followed = (f: { event?: string }) => f.event === "sessions.changed" || f.event === "session.message";
    expect(tenant.frames.slice(before).filter((f) => f.event === "chat")).not.toEqual([]);
    expect(tenant.frames.slice(before).filter(followed)).toEqual([]);
    for (const p of [tenant, root]) p.close();
    await g.gw.close();
  });

  it("keeps a bad param a clear error on a connection that keeps working", async () => {
    const g = await startTestGateway();
    const peer = await connectedPeer(g.url);
    expect((await peer.call("sessions.create", { key: "x" })).ok).toBe(true);
    // a model that is no "provider/model", no alias and no configured provider's model id
    const bad = await peer.call("sessions.patch", { key: "x", model: "no-provider" });
    expect(bad.error).toMatchObject({ code: "invalid_params" });
    expect(bad.error?.message).toMatch(/^params\.model: unknown model "no-provider": expected "<provider>\/<model>"/);
    expect(issues(bad.error, "ErrorShape")).toEqual([]);
    const missing = await peer.call("sessions.patch", { key: "never-made", thinkingLevel: "low" });
    expect(missing.error?.code).toBe("not_found");
    expect((await peer.call("sessions.messages.subscribe", {})).error?.message).toBe("params.key: required");
    expect((await peer.call("health")).ok).toBe(true);
    peer.close();
    await g.gw.close();
  });
});
