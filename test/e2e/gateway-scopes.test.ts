/*
 * Scoped access (SPEC 21) over a real gateway and real WebSockets: one visibility rule for agent, agent.wait,
 * chat.*, sessions.* and event delivery. An operator.write-only client sees and controls only the runs it started,
 * inside the sessions its token grants; operator.read / operator.admin see every run of their granted sessions.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  connectedPeer,
  type Deferred,
  deferred,
  isLifecycleEnd,
  RawPeer,
  type TestGateway,
  TestProvider,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

/** Every model call waits on the gate of its message text ("hold:<name>"); other messages answer at once. */
function gatedProvider(gates: Map<string, Deferred>): TestProvider {
  return new TestProvider((req) => {
    const last = [...req.messages].reverse().find((m) => m.role === "user");
    const text = String(last?.content ?? "");
    const gate = gates.get(text);
    return gate ? { before: ["working "], gate: gate.promise, after: ["done"] } : { before: [`reply to ${text}`] };
  });
}

describe("scope leaks of an operator.write-only client (issue 11)", () => {
  it("an operator.write client cannot chat.abort another session's run", async () => {
    const hold = deferred();
    const { url } = await gateway({ provider: gatedProvider(new Map([["hold", hold]])) });
    const owner = await connectedPeer(url, { scopes: ["operator.write"] });
    const other = await connectedPeer(url, { scopes: ["operator.write"] });
    const id = owner.send("agent", { message: "hold", idempotencyKey: "victim-1", sessionKey: "victim" });
    await owner.response(id, 1);
    await owner.seen((f) => f.event === "agent" && f.payload?.stream === "assistant", "the victim run streaming");
    const res = await other.call("chat.abort", { sessionKey: "victim", runId: "victim-1" });
    expect(res.error).toMatchObject({ code: "forbidden" });
    const all = await other.call("chat.abort", { sessionKey: "victim" });
    // without a runId only the caller's own runs are aborted: none here
    expect(all.payload).toMatchObject({ aborted: false, runIds: [] });
    hold.resolve();
    expect((await owner.response(id, 2)).payload).toMatchObject({ runId: "victim-1", status: "ok" });
    for (const p of [owner, other]) p.close();
  });

  it("an operator.write client cannot learn another session's run status through agent.wait", async () => {
    const { url } = await gateway();
    const owner = await connectedPeer(url, { scopes: ["operator.write"] });
    const other = await connectedPeer(url, { scopes: ["operator.write"] });
    const id = owner.send("agent", { message: "secret plan", idempotencyKey: "private-1", sessionKey: "private" });
    await owner.response(id, 2);
    const res = await other.call("agent.wait", { runId: "private-1", timeoutMs: 0 });
    expect(res.ok).toBe(false);
    expect(res.error).toMatchObject({ code: "forbidden" });
    expect(JSON.stringify(res)).not.toContain("startedAt");
    // the run's own client still can
    expect((await owner.call("agent.wait", { runId: "private-1", timeoutMs: 0 })).payload).toMatchObject({
      runId: "private-1",
      status: "ok",
    });
    for (const p of [owner, other]) p.close();
  });

  it("sending one message into a session does not make its earlier history readable", async () => {
    const { url } = await gateway();
    const operator = await connectedPeer(url);
    const earlier = operator.send("agent", {
      message: "the earlier secret",
      idempotencyKey: "h-1",
      sessionKey: "shared",
    });
    await operator.response(earlier, 2);
    const writer = await connectedPeer(url, { scopes: ["operator.write"] });
    const mine = writer.send("agent", { message: "hello", idempotencyKey: "h-2", sessionKey: "shared" });
    await writer.response(mine, 2);
    const history = await writer.call("chat.history", { sessionKey: "shared" });
    expect(history.error).toMatchObject({
      code: "unauthorized",
      details: { code: "MISSING_SCOPE", missingScope: "operator.read" },
    });
    expect(JSON.stringify(history)).not.toContain("the earlier secret");
    const list = await writer.call("sessions.list");
    expect(list.error).toMatchObject({ code: "unauthorized" });
    const get = await writer.call("sessions.get", { sessionKey: "shared" });
    expect(get.error).toMatchObject({ code: "unauthorized" });
    // and it never received the earlier run's events either
    expect(writer.all((f) => f.event === "agent" && f.payload?.runId === "h-1")).toEqual([]);
    await operator.seen(isLifecycleEnd("h-2"), "the writer's run on the operator");
    for (const p of [operator, writer]) p.close();
  });
});

type Scope = "operator.write" | "operator.read" | "operator.admin";
const GRANTED = "agent:main:support-*";
const TOKENS = {
  "operator.write": "tenant-write",
  "operator.read": "tenant-read",
  "operator.admin": "tenant-admin",
} as const;

/** A gateway whose tenant tokens grant one scope each inside `support-*`; "root" is the single full token. */
async function tenantGateway(): Promise<TestGateway> {
  const tokens = Object.entries(TOKENS).map(([scope, token]) => ({ token, scopes: [scope], sessions: [GRANTED] }));
  // a job that runs inside the grant, and one that runs in its own cron:<id> session, outside it
  const jobs = [
    { id: "in", schedule: "0 0 1 1 *", message: "x", sessionKey: "support-cron" },
    { id: "out", schedule: "0 0 1 1 *", message: "x" },
  ];
  // the OpenAI-compatible HTTP API (SPEC 26) is one more way in: its cells sit in the same table
  const http = { endpoints: { chatCompletions: { enabled: true }, responses: { enabled: true } } };
  return gateway({ config: { gateway: { auth: { token: "root", tokens }, http }, cron: { jobs } } });
}

/** An HTTP answer of the OpenAI API as a cell: "ok", or the WebSocket code of the same refusal. */
async function httpOutcome(res: Response): Promise<string> {
  if (res.ok) return "ok";
  const code = ((await res.json()) as { error?: { code?: string } }).error?.code;
  return res.status === 403 && code === "missing_scope" ? "unauthorized" : `${code}`;
}

/** The outcome of one cell: "ok" or the error code. */
const outcome = (f: { ok?: boolean; error?: { code: string } }) => (f.ok ? "ok" : String(f.error?.code));

/*
 * method × scope × grant. Targets: "own" = a run this client started in a granted session, "granted" = another
 * client's run / a session inside the token's grant, "ungranted" = outside it. "events" is delivery.
 */
const EXPECTED: Record<Scope, Record<string, string>> = {
  "operator.write": {
    "POST /v1/chat/completions granted": "ok",
    "POST /v1/chat/completions ungranted": "forbidden",
    "POST /v1/responses granted": "ok",
    "POST /v1/responses ungranted": "forbidden",
    "GET /v1/models": "ok",
    "agent granted": "ok",
    "agent ungranted": "forbidden",
    "chat.send granted": "ok",
    "chat.send ungranted": "forbidden",
    "agent.wait own": "ok",
    "agent.wait granted": "forbidden",
    "agent.wait ungranted": "forbidden",
    "chat.abort own": "ok",
    "chat.abort granted": "forbidden",
    "chat.abort ungranted": "forbidden",
    "chat.history granted": "unauthorized",
    "chat.history ungranted": "unauthorized",
    "sessions.get granted": "unauthorized",
    "sessions.get ungranted": "unauthorized",
    "sessions.list": "unauthorized",
    "sessions.reset granted": "unauthorized",
    "sessions.reset ungranted": "unauthorized",
    "sessions.delete granted": "unauthorized",
    "sessions.delete ungranted": "unauthorized",
    "exec.approval.list": "unauthorized",
    "exec.approval.resolve unknown": "unauthorized",
    "usage.summary": "unauthorized",
    "budget.approval.resolve unknown": "unauthorized",
    "cron.list": "unauthorized",
    "cron.add granted": "unauthorized",
    "cron.add ungranted": "unauthorized",
    "cron.run granted": "unauthorized",
    "cron.run ungranted": "unauthorized",
    "cron.remove granted": "unauthorized",
    "cron.remove ungranted": "unauthorized",
    "cron.update granted": "unauthorized",
    "cron.update ungranted": "unauthorized",
    "cron.runs granted": "unauthorized",
    "cron.runs ungranted": "unauthorized",
    "logs.tail": "unauthorized",
    "config.schema": "unauthorized",
    "skills.status": "unauthorized",
    "skills.update": "unauthorized",
    "plugins.list": "unauthorized",
    "plugins.setEnabled": "unauthorized",
    "exec.approvals.get": "unauthorized",
    "exec.approvals.set": "unauthorized",
    "diagnostics.list": "unauthorized",
    "diagnostics.list ungranted": "unauthorized",
    "events own": "delivered",
    "events granted": "none",
    "events ungranted": "none",
    "audit.list granted": "unauthorized",
    "audit.list ungranted": "unauthorized",
    "audit.list": "unauthorized",
    "runs.list granted": "unauthorized",
    "runs.list ungranted": "unauthorized",
    "runs.list": "unauthorized",
    "sessions.describe granted": "unauthorized",
    "sessions.describe ungranted": "unauthorized",
    "sessions.patch granted": "unauthorized",
    "sessions.patch ungranted": "unauthorized",
    "sessions.messages.subscribe granted": "unauthorized",
    "sessions.messages.subscribe ungranted": "unauthorized",
    "sessions.create granted": "ok",
    "sessions.create ungranted": "forbidden",
    "config.get": "unauthorized",
    // gateway-wide: a token limited to some sessions reads the health, never changes every session's keys
    "models.authStatus": "unauthorized",
    "models.authClear": "unauthorized",
    status: "unauthorized",
    "agent.events own": "ok",
    "agent.events granted": "forbidden",
    "agent.events ungranted": "forbidden",
  },
  "operator.read": {
    "POST /v1/chat/completions granted": "unauthorized",
    "POST /v1/chat/completions ungranted": "unauthorized",
    "POST /v1/responses granted": "unauthorized",
    "POST /v1/responses ungranted": "unauthorized",
    "GET /v1/models": "ok",
    "agent granted": "unauthorized",
    "agent ungranted": "unauthorized",
    "chat.send granted": "unauthorized",
    "chat.send ungranted": "unauthorized",
    "agent.wait granted": "ok",
    "agent.wait ungranted": "forbidden",
    "chat.abort granted": "unauthorized",
    "chat.abort ungranted": "unauthorized",
    "chat.history granted": "ok",
    "chat.history ungranted": "forbidden",
    "sessions.get granted": "ok",
    "sessions.get ungranted": "forbidden",
    "sessions.list": "ok: granted sessions only",
    "sessions.reset granted": "unauthorized",
    "sessions.reset ungranted": "unauthorized",
    "sessions.delete granted": "unauthorized",
    "sessions.delete ungranted": "unauthorized",
    "exec.approval.list": "unauthorized",
    "exec.approval.resolve unknown": "unauthorized",
    "usage.summary": "ok: granted sessions only",
    "budget.approval.resolve unknown": "unauthorized",
    "cron.list": "ok: in",
    "cron.add granted": "unauthorized",
    "cron.add ungranted": "unauthorized",
    "cron.run granted": "unauthorized",
    "cron.run ungranted": "unauthorized",
    "cron.remove granted": "unauthorized",
    "cron.remove ungranted": "unauthorized",
    "cron.update granted": "unauthorized",
    "cron.update ungranted": "unauthorized",
    "cron.runs granted": "ok",
    "cron.runs ungranted": "not_found",
    "logs.tail": "unauthorized",
    "config.schema": "unauthorized",
    "skills.status": "ok",
    "skills.update": "unauthorized",
    "plugins.list": "ok",
    "plugins.setEnabled": "unauthorized",
    "exec.approvals.get": "unauthorized",
    "exec.approvals.set": "unauthorized",
    "diagnostics.list": "ok",
    "diagnostics.list ungranted": "forbidden",
    "events granted": "delivered",
    "events ungranted": "none",
    "audit.list granted": "ok",
    "audit.list ungranted": "forbidden",
    "audit.list": "ok: granted sessions only",
    "runs.list granted": "ok",
    "runs.list ungranted": "forbidden",
    "runs.list": "ok: granted sessions only",
    "sessions.describe granted": "ok",
    "sessions.describe ungranted": "forbidden",
    "sessions.patch granted": "unauthorized",
    "sessions.patch ungranted": "unauthorized",
    "sessions.messages.subscribe granted": "ok",
    "sessions.messages.subscribe ungranted": "forbidden",
    "sessions.create granted": "unauthorized",
    "sessions.create ungranted": "unauthorized",
    "config.get": "unauthorized",
    // gateway-wide: a token limited to some sessions reads the health, never changes every session's keys
    "models.authStatus": "ok",
    "models.authClear": "unauthorized",
    status: "ok",
    "agent.events granted": "ok",
    "agent.events ungranted": "forbidden",
  },
  "operator.admin": {
    "POST /v1/chat/completions granted": "ok",
    "POST /v1/chat/completions ungranted": "forbidden",
    "POST /v1/responses granted": "ok",
    "POST /v1/responses ungranted": "forbidden",
    "GET /v1/models": "ok",
    "agent granted": "ok",
    "agent ungranted": "forbidden",
    "chat.send granted": "ok",
    "chat.send ungranted": "forbidden",
    "agent.wait own": "ok",
    "agent.wait granted": "ok",
    "agent.wait ungranted": "forbidden",
    "chat.abort own": "ok",
    "chat.abort granted": "ok",
    "chat.abort ungranted": "forbidden",
    "chat.history granted": "ok",
    "chat.history ungranted": "forbidden",
    "sessions.get granted": "ok",
    "sessions.get ungranted": "forbidden",
    "sessions.list": "ok: granted sessions only",
    "sessions.reset granted": "ok",
    "sessions.reset ungranted": "forbidden",
    "sessions.delete granted": "ok",
    "sessions.delete ungranted": "forbidden",
    "exec.approval.list": "ok",
    "exec.approval.resolve unknown": "not_found",
    "usage.summary": "ok: granted sessions only",
    "budget.approval.resolve unknown": "not_found",
    "cron.list": "ok: in",
    "cron.add granted": "ok",
    "cron.add ungranted": "forbidden",
    "cron.run granted": "ok",
    "cron.run ungranted": "forbidden",
    "cron.remove granted": "ok",
    "cron.remove ungranted": "forbidden",
    "cron.update granted": "ok",
    "cron.update ungranted": "forbidden",
    "cron.runs granted": "ok",
    "cron.runs ungranted": "not_found",
    // gateway-wide: a token confined to some sessions is one tenant's
    "logs.tail": "forbidden",
    "config.schema": "ok",
    "skills.status": "ok",
    "skills.update": "forbidden",
    "plugins.list": "ok",
    "plugins.setEnabled": "forbidden",
    "exec.approvals.get": "forbidden",
    "exec.approvals.set": "forbidden",
    "diagnostics.list": "ok",
    "diagnostics.list ungranted": "forbidden",
    "events own": "delivered",
    "events granted": "delivered",
    "events ungranted": "none",
    "audit.list granted": "ok",
    "audit.list ungranted": "forbidden",
    "audit.list": "ok: granted sessions only",
    "runs.list granted": "ok",
    "runs.list ungranted": "forbidden",
    "runs.list": "ok: granted sessions only",
    "sessions.describe granted": "ok",
    "sessions.describe ungranted": "forbidden",
    "sessions.patch granted": "ok",
    "sessions.patch ungranted": "forbidden",
    "sessions.messages.subscribe granted": "ok",
    "sessions.messages.subscribe ungranted": "forbidden",
    "sessions.create granted": "ok",
    "sessions.create ungranted": "forbidden",
    "config.get": "ok",
    // gateway-wide: a token limited to some sessions reads the health, never changes every session's keys
    "models.authStatus": "ok",
    "models.authClear": "forbidden",
    status: "ok",
    "agent.events own": "ok",
    "agent.events granted": "ok",
    "agent.events ungranted": "forbidden",
  },
};

describe("one visibility rule: method × scope × grant", () => {
  it.each(Object.keys(EXPECTED) as Scope[])(
    "%s only: every method inside and outside the token's granted sessions",
    async (scope) => {
      const { url, gw } = await tenantGateway();
      const client = await connectedPeer(url, { token: TOKENS[scope] });
      const root = await connectedPeer(url, { token: "root" });
      const runs = { granted: ["support-a", "gr-1"], ungranted: ["sales", "un-1"] } as const;
      for (const [sessionKey, runId] of Object.values(runs)) {
        await root.response(root.send("agent", { message: "hi", idempotencyKey: runId, sessionKey }), 2);
      }
      const sends = scope !== "operator.read";
      if (sends)
        await client.response(
          client.send("agent", { message: "mine", idempotencyKey: "own-1", sessionKey: "support-own" }),
          2,
        );
      const key = { own: "agent:main:support-own", granted: "agent:main:support-a", ungranted: "agent:main:sales" };
      const runOf = { own: "own-1", granted: "gr-1", ungranted: "un-1" };
      const targets = (sends ? ["own", "granted", "ungranted"] : ["granted", "ungranted"]) as Array<keyof typeof key>;
      const actual: Record<string, string> = {};
      // frames on one socket keep their order: events sent before this answer have arrived with it
      await client.call("health");
      for (const t of targets) {
        const seen = client.all((f) => f.type === "event" && f.payload?.runId === runOf[t]).length > 0;
        actual[`events ${t}`] = seen ? "delivered" : "none";
      }
      for (const t of ["granted", "ungranted"] as const) {
        const sessionKey = t === "granted" ? "support-new" : "sales-new";
        actual[`agent ${t}`] = outcome(
          await client.call("agent", { message: "x", idempotencyKey: `a-${t}`, sessionKey }),
        );
        const chat = { message: "x", idempotencyKey: `c-${t}`, sessionKey };
        actual[`chat.send ${t}`] = outcome(await client.call("chat.send", chat));
      }
      const openai = (path: string, init: RequestInit = {}) =>
        fetch(`http://127.0.0.1:${gw.port}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${TOKENS[scope]}`, "content-type": "application/json", ...init.headers },
        }).then(httpOutcome);
      for (const t of ["granted", "ungranted"] as const) {
        const session = { "x-openclaw-session-key": t === "granted" ? "support-http" : "sales-http" };
        const chat = { model: "loopgate/main", messages: [{ role: "user", content: "x" }] };
        actual[`POST /v1/chat/completions ${t}`] = await openai("/v1/chat/completions", {
          method: "POST",
          headers: session,
          body: JSON.stringify(chat),
        });
        actual[`POST /v1/responses ${t}`] = await openai("/v1/responses", {
          method: "POST",
          headers: session,
          body: JSON.stringify({ model: "loopgate/main", input: "x" }),
        });
      }
      actual["GET /v1/models"] = await openai("/v1/models");
      for (const t of targets) {
        actual[`agent.wait ${t}`] = outcome(await client.call("agent.wait", { runId: runOf[t], timeoutMs: 0 }));
        const abort = { sessionKey: key[t], runId: runOf[t] };
        actual[`chat.abort ${t}`] = outcome(await client.call("chat.abort", abort));
        actual[`agent.events ${t}`] = outcome(await client.call("agent.events", { runId: runOf[t] }));
      }
      for (const t of ["granted", "ungranted"] as const) {
        actual[`chat.history ${t}`] = outcome(await client.call("chat.history", { sessionKey: key[t] }));
        actual[`sessions.get ${t}`] = outcome(await client.call("sessions.get", { sessionKey: key[t] }));
      }
      const list = await client.call("sessions.list");
      const listed = ((list.payload?.sessions ?? []) as Array<{ key: string }>).map((s) => s.key);
      actual["sessions.list"] = list.ok
        ? listed.every((k) => k.startsWith("agent:main:support-")) && listed.includes(key.granted)
          ? "ok: granted sessions only"
          : `ok: ${listed.join(", ")}`
        : outcome(list);
      // OpenClaw's session methods (issue 16), before reset and delete change the sessions
      for (const t of ["granted", "ungranted"] as const) {
        actual[`sessions.describe ${t}`] = outcome(await client.call("sessions.describe", { key: key[t] }));
        const patch = { key: key[t], thinkingLevel: "low" };
        actual[`sessions.patch ${t}`] = outcome(await client.call("sessions.patch", patch));
        const follow = { key: key[t] };
        actual[`sessions.messages.subscribe ${t}`] = outcome(await client.call("sessions.messages.subscribe", follow));
        const made = { key: t === "granted" ? "support-made" : "sales-made" };
        actual[`sessions.create ${t}`] = outcome(await client.call("sessions.create", made));
      }
      actual["config.get"] = outcome(await client.call("config.get"));
      actual["models.authStatus"] = outcome(await client.call("models.authStatus", {}));
      actual["models.authClear"] = outcome(await client.call("models.authClear", { id: "t:default" }));
      actual.status = outcome(await client.call("status"));
      for (const method of ["sessions.reset", "sessions.delete"]) {
        for (const t of ["granted", "ungranted"] as const) {
          actual[`${method} ${t}`] = outcome(await client.call(method, { sessionKey: key[t] }));
        }
      }
      actual["exec.approval.list"] = outcome(await client.call("exec.approval.list"));
      const unknownApproval = { id: "no-such-approval", decision: "deny" };
      actual["exec.approval.resolve unknown"] = outcome(await client.call("exec.approval.resolve", unknownApproval));
      const unknownBudget = { id: "budget-no-such-approval", decision: "deny" };
      actual["budget.approval.resolve unknown"] = outcome(await client.call("budget.approval.resolve", unknownBudget));
      const usage = await client.call("usage.summary", { by: "session" });
      const spentIn = ((usage.payload?.groups ?? []) as Array<{ key: string }>).map((g) => g.key);
      actual["usage.summary"] = usage.ok
        ? spentIn.every((k) => k.startsWith("agent:main:support-")) && spentIn.includes(key.granted)
          ? "ok: granted sessions only"
          : `ok: ${spentIn.join(", ")}`
        : outcome(usage);
      for (const t of ["granted", "ungranted"] as const) {
        actual[`audit.list ${t}`] = outcome(await client.call("audit.list", { sessionKey: key[t] }));
      }
      const audit = await client.call("audit.list");
      const audited = [
        ...new Set(((audit.payload?.events ?? []) as Array<{ sessionKey: string }>).map((e) => e.sessionKey)),
      ];
      actual["audit.list"] = audit.ok
        ? audited.every((k) => k.startsWith("agent:main:support-")) && audited.includes(key.granted)
          ? "ok: granted sessions only"
          : `ok: ${audited.join(", ")}`
        : outcome(audit);
      for (const t of ["granted", "ungranted"] as const) {
        actual[`runs.list ${t}`] = outcome(await client.call("runs.list", { sessionKey: key[t] }));
      }
      const runList = await client.call("runs.list");
      const runSessions = [
        ...new Set(((runList.payload?.runs ?? []) as Array<{ sessionKey: string }>).map((r) => r.sessionKey)),
      ];
      actual["runs.list"] = runList.ok
        ? runSessions.every((k) => k.startsWith("agent:main:support-")) && runSessions.includes(key.granted)
          ? "ok: granted sessions only"
          : `ok: ${runSessions.join(", ")}`
        : outcome(runList);
      // cron: jobs are listed, added, run and removed only inside the sessions the token grants
      const cronList = await client.call("cron.list");
      actual["cron.list"] = cronList.ok
        ? `ok: ${((cronList.payload?.jobs ?? []) as Array<{ id: string }>).map((j) => j.id).join(", ")}`
        : outcome(cronList);
      const newJob = { schedule: "0 0 1 1 *", message: "x" };
      const cronAdd = {
        granted: { id: "new-in", sessionKey: "support-y", ...newJob },
        ungranted: { id: "new-out", ...newJob },
      };
      for (const t of ["granted", "ungranted"] as const) {
        actual[`cron.add ${t}`] = outcome(await client.call("cron.add", cronAdd[t]));
      }
      for (const t of ["granted", "ungranted"] as const) {
        actual[`cron.run ${t}`] = outcome(await client.call("cron.run", { id: t === "granted" ? "in" : "out" }));
      }
      // the console's operator methods (issue 31); cron.update and cron.runs before the job goes
      for (const t of ["granted", "ungranted"] as const) {
        const id = t === "granted" ? "new-in" : "out";
        actual[`cron.update ${t}`] = outcome(await client.call("cron.update", { id, patch: { enabled: false } }));
        actual[`cron.runs ${t}`] = outcome(await client.call("cron.runs", { id: t === "granted" ? "in" : "out" }));
      }
      actual["logs.tail"] = outcome(await client.call("logs.tail", {}));
      actual["config.schema"] = outcome(await client.call("config.schema"));
      actual["skills.status"] = outcome(await client.call("skills.status", {}));
      actual["skills.update"] = outcome(await client.call("skills.update", { skillKey: "none", enabled: false }));
      actual["plugins.list"] = outcome(await client.call("plugins.list"));
      const plugin = { pluginId: "none", enabled: false };
      actual["plugins.setEnabled"] = outcome(await client.call("plugins.setEnabled", plugin));
      actual["exec.approvals.get"] = outcome(await client.call("exec.approvals.get"));
      const allowlist = { file: { allowlist: ["git *"] } };
      actual["exec.approvals.set"] = outcome(await client.call("exec.approvals.set", allowlist));
      for (const t of ["granted", "ungranted"] as const) {
        actual[`cron.remove ${t}`] = outcome(
          await client.call("cron.remove", { id: t === "granted" ? "new-in" : "out" }),
        );
      }
      actual["diagnostics.list"] = outcome(await client.call("diagnostics.list"));
      actual["diagnostics.list ungranted"] = outcome(
        await client.call("diagnostics.list", { sessionKey: key.ungranted }),
      );
      expect(actual).toEqual(EXPECTED[scope]);
      for (const p of [client, root]) p.close();
    },
  );
});

describe("tenant tokens (gateway.auth.tokens)", () => {
  it("a token's scopes cap the scopes a client asks for in connect", async () => {
    const tokens = [{ token: "bridge", scopes: ["operator.read", "operator.write"], sessions: ["*"] }];
    const { url } = await gateway({ config: { gateway: { auth: { tokens } } } });
    const asked = await connectedPeer(url, { token: "bridge", scopes: ["operator.admin", "operator.write"] });
    expect((await asked.call("health")).ok).toBe(true);
    const hello = asked.all((f) => f.type === "res" && f.payload?.type === "hello-ok")[0];
    expect(hello.payload?.auth).toEqual({ role: "operator", scopes: ["operator.write"] });
    expect((await asked.call("sessions.reset", { sessionKey: "x" })).error).toMatchObject({ code: "unauthorized" });
    const unasked = await connectedPeer(url, { token: "bridge" });
    const hello2 = unasked.all((f) => f.type === "res" && f.payload?.type === "hello-ok")[0];
    expect(hello2.payload?.auth).toEqual({ role: "operator", scopes: ["operator.read", "operator.write"] });
    for (const p of [asked, unasked]) p.close();
  });

  it("a tokenHash entry accepts the token whose sha256 it is, and nothing else", async () => {
    const tokenHash = createHash("sha256").update("hashed-secret").digest("hex");
    const tokens = [{ tokenHash, scopes: ["operator.read"], sessions: ["*"] }];
    const { url } = await gateway({ config: { gateway: { auth: { tokens } } } });
    const good = await connectedPeer(url, { token: "hashed-secret" });
    expect((await good.call("sessions.list")).ok).toBe(true);
    for (const token of ["hashed-secreT", tokenHash, ""]) {
      const peer = await RawPeer.open(url);
      const res = await peer.connect({ token });
      expect(res.error).toMatchObject({ code: "unauthorized", message: expect.stringContaining("params.auth.token") });
      await peer.closed;
    }
    good.close();
  });

  it("the single gateway.auth.token still grants every scope in every session", async () => {
    const { url } = await tenantGateway();
    const root = await connectedPeer(url, { token: "root" });
    const hello = root.all((f) => f.type === "res" && f.payload?.type === "hello-ok")[0];
    expect(hello.payload?.auth).toMatchObject({
      scopes: expect.arrayContaining(["operator.admin", "operator.read", "operator.write"]),
    });
    await root.response(root.send("agent", { message: "hi", idempotencyKey: "r-1", sessionKey: "sales" }), 2);
    expect((await root.call("chat.history", { sessionKey: "sales" })).ok).toBe(true);
    expect((await root.call("sessions.delete", { sessionKey: "sales" })).ok).toBe(true);
    root.close();
  });

  it("sending into a session the token does not grant is forbidden, names the grant, and stores nothing", async () => {
    const { url } = await tenantGateway();
    const tenant = await connectedPeer(url, { token: TOKENS["operator.write"] });
    const res = await tenant.call("chat.send", { message: "x", idempotencyKey: "stray-1", sessionKey: "sales" });
    expect(res.error).toEqual({
      code: "forbidden",
      message: `this client may not send to session "agent:main:sales": its token grants sessions ${GRANTED}`,
    });
    const root = await connectedPeer(url, { token: "root" });
    expect((await root.call("agent.wait", { runId: "stray-1", timeoutMs: 0 })).error).toMatchObject({
      code: "not_found",
    });
    expect((await root.call("sessions.get", { sessionKey: "sales" })).error).toMatchObject({ code: "not_found" });
    for (const p of [tenant, root]) p.close();
  });

  it("repeating another client's idempotency key does not hand a write-only client that run", async () => {
    const { url } = await tenantGateway();
    const root = await connectedPeer(url, { token: "root" });
    await root.response(root.send("agent", { message: "theirs", idempotencyKey: "k-1", sessionKey: "support-a" }), 2);
    const tenant = await connectedPeer(url, { token: TOKENS["operator.write"] });
    const res = await tenant.call("agent", { message: "mine", idempotencyKey: "k-1", sessionKey: "support-a" });
    expect(res.error).toMatchObject({ code: "forbidden" });
    expect(tenant.all((f) => f.type === "res" && f.ok === true && f.payload?.runId === "k-1")).toEqual([]);
    // its own repeat still answers with its own run
    const own = tenant.send("agent", { message: "mine", idempotencyKey: "k-2", sessionKey: "support-a" });
    await tenant.response(own, 2);
    const again = tenant.send("agent", { message: "mine", idempotencyKey: "k-2", sessionKey: "support-a" });
    expect((await tenant.response(again, 2)).payload).toMatchObject({ runId: "k-2", status: "ok" });
    for (const p of [tenant, root]) p.close();
  });
});

describe("diagnostics follow the same rule", () => {
  it("an operator.read tenant sees stuck-session diagnostics of its granted sessions only, as events and in diagnostics.list", async () => {
    const held = deferred();
    const provider = new TestProvider((req) => {
      const last = [...req.messages].reverse().find((m) => m.role === "user");
      return { before: ["thinking"], gate: held.promise, after: [` about ${String(last?.content ?? "")}`] };
    });
    const tokens = [{ token: "tenant-read", scopes: ["operator.read"], sessions: [GRANTED] }];
    const { url } = await gateway({
      provider,
      config: {
        gateway: { auth: { token: "root", tokens } },
        diagnostics: { enabled: true, stuckSessionWarnMs: 50, stuckSessionAbortMs: 600_000 },
      },
    });
    const tenant = await connectedPeer(url, { token: "tenant-read" });
    const root = await connectedPeer(url, { token: "root" });
    const sales = root.send("agent", { message: "sales", idempotencyKey: "d-sales", sessionKey: "sales" });
    const support = root.send("agent", { message: "support", idempotencyKey: "d-support", sessionKey: "support-a" });
    // root sees both sessions reported; by then the tenant has been offered the same events
    await root.seen((f) => f.event === "diagnostic" && f.payload?.sessionKey === "agent:main:sales", "sales");
    await root.seen((f) => f.event === "diagnostic" && f.payload?.sessionKey === "agent:main:support-a", "support");
    await tenant.seen((f) => f.event === "diagnostic" && f.payload?.sessionKey === "agent:main:support-a", "support");
    const list = await tenant.call("diagnostics.list");
    held.resolve();
    const keysOf = (xs: unknown) => [...new Set((xs as Array<{ sessionKey: string }>).map((d) => d.sessionKey))];
    expect(keysOf(list.payload?.sessions)).toEqual(["agent:main:support-a"]);
    expect(keysOf(list.payload?.recent)).toEqual(["agent:main:support-a"]);
    expect(keysOf((await root.call("diagnostics.list")).payload?.recent).sort()).toEqual([
      "agent:main:sales",
      "agent:main:support-a",
    ]);
    expect(tenant.all((f) => f.event === "diagnostic" && f.payload?.sessionKey !== "agent:main:support-a")).toEqual([]);
    await root.response(sales, 2);
    await root.response(support, 2);
    for (const p of [tenant, root]) p.close();
  });
});

describe("health and status of a session-scoped token (issue 25 item 10)", () => {
  it("scoped-health-hides-other-tenants: health, status and cron.status show a scoped token only its sessions' cron jobs and no gateway-wide counts", async () => {
    const { url, gw } = await gateway({
      config: {
        gateway: {
          auth: {
            token: "root",
            tokens: [{ token: "tenant", scopes: ["operator.read", "operator.write"], sessions: ["cron:alpha"] }],
          },
        },
        // once a year: the runs come only from cron.run below
        cron: {
          jobs: [
            { id: "alpha", schedule: "0 0 1 1 *", message: "a" },
            { id: "beta", schedule: "0 0 1 1 *", message: "b" },
          ],
        },
      },
    });
    const root = await connectedPeer(url, { token: "root" });
    const runIds: Record<string, string> = {};
    for (const id of ["alpha", "beta"]) {
      const res = await root.call("cron.run", { id });
      runIds[id] = String(res.payload?.runId);
      expect((await root.call("agent.wait", { runId: runIds[id] })).payload?.status).toBe("ok");
    }
    const tenant = await connectedPeer(url, { token: "tenant" });
    for (const method of ["health", "status"]) {
      const seen = (await tenant.call(method)).payload as Record<string, unknown>;
      console.log(`[scoped] ${method} for a token of cron:alpha: ${JSON.stringify(seen)}`);
      expect(seen.cron, method).toEqual({
        jobs: 1,
        last: [expect.objectContaining({ jobId: "alpha", runId: runIds.alpha })],
      });
      expect(JSON.stringify(seen), method).not.toContain("beta");
      expect(JSON.stringify(seen), method).not.toContain(runIds.beta);
      for (const key of ["activeRuns", "sessions", "queueDepth", "stuckSessions", "audit"]) {
        expect(seen, `${method}.${key}`).not.toHaveProperty(key);
      }
      expect(seen.ok, method).toBe(true);
      // the root token still sees the whole gateway
      const all = (await root.call(method)).payload as Record<string, unknown>;
      expect(all.cron, method).toMatchObject({ jobs: 2 });
      expect(all.sessions, method).toBe(2);
    }
    const cronStatus = (await tenant.call("cron.status")).payload;
    expect(cronStatus).toMatchObject({ jobs: 1, last: [{ jobId: "alpha" }] });
    // GET /health with the tenant's token: up or down, like no token; the root token gets the details
    const http = (token: string) =>
      fetch(`http://127.0.0.1:${gw.port}/health`, { headers: { authorization: `Bearer ${token}` } }).then((r) =>
        r.json(),
      );
    expect(await http("tenant")).toEqual({ ok: true });
    expect(await http("root")).toMatchObject({ sessions: 2, cron: { jobs: 2 } });
    for (const p of [root, tenant]) p.close();
  });
});
