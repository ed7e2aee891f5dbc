/**
 * The OpenAI-compatible HTTP API (SPEC 26) over a real gateway on loopback, driven by the official `openai` npm
 * client where a user would use it, and by raw HTTP requests for the errors (what curl sees).
 */
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import {
  connectedPeer,
  deferred,
  type TestGateway,
  TestProvider,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

const ADMIN = "admin-token";
const WRITER = "writer-token";
const READER = "reader-token";
const TENANT = "tenant-token";

const tokens = [
  { token: ADMIN, scopes: ["operator.admin", "operator.write", "operator.read"], sessions: ["*"] },
  { token: WRITER, scopes: ["operator.write"], sessions: ["*"] },
  { token: READER, scopes: ["operator.read"], sessions: ["*"] },
  { token: TENANT, scopes: ["operator.write"], sessions: ["agent:main:openai-user:tenant-*"] },
];

function enabled(extra: Record<string, unknown> = {}, endpoints = { chatCompletions: true, responses: true }) {
  return {
    gateway: {
      http: {
        endpoints: {
          chatCompletions: { enabled: endpoints.chatCompletions },
          responses: { enabled: endpoints.responses },
        },
      },
      auth: { tokens },
    },
    ...extra,
  };
}

function httpBase(g: TestGateway): string {
  return `http://127.0.0.1:${g.gw.port}`;
}

function client(g: TestGateway, token = WRITER): OpenAI {
  return new OpenAI({ baseURL: `${httpBase(g)}/v1`, apiKey: token, maxRetries: 0 });
}

async function post(g: TestGateway, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${httpBase(g)}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${WRITER}`, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { error?: Record<string, unknown> } };
}

describe("the OpenAI-compatible HTTP API", () => {
  it("the openai client gets the agent's reply from a chat completion, streamed and not, and from responses.create both ways", async () => {
    const g = await gateway({ config: enabled() });
    const openai = client(g);

    const plain = await openai.chat.completions.create({
      model: "loopgate/main",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(plain.choices[0].message.content).toBe("reply to hello");
    expect(plain.choices[0].finish_reason).toBe("stop");
    expect(plain.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
    expect(plain.id).toMatch(/^chatcmpl-/);

    const stream = await openai.chat.completions.create({
      model: "loopgate/main",
      messages: [{ role: "user", content: "streamed" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let finish: string | null = null;
    let usage: unknown;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) deltas.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas.join("")).toBe("reply to streamed");
    expect(finish).toBe("stop");
    expect(usage).toMatchObject({ total_tokens: 15 });

    const response = await openai.responses.create({ model: "loopgate/main", input: "as a response" });
    expect(response.output_text).toBe("reply to as a response");
    expect(response.status).toBe("completed");
    expect(response.usage?.total_tokens).toBe(15);

    const events = await openai.responses.create({ model: "loopgate/main", input: "streamed response", stream: true });
    const types: string[] = [];
    let text = "";
    let completed: { output_text?: string; status?: string } | undefined;
    for await (const ev of events) {
      types.push(ev.type);
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") completed = ev.response;
    }
    expect(text).toBe("reply to streamed response");
    expect(types[0]).toBe("response.created");
    expect(types).toContain("response.output_text.done");
    expect(types.at(-1)).toBe("response.completed");
    expect(completed?.status).toBe("completed");
  });

  it("models.list names one model per agent and the configured aliases", async () => {
    const g = await gateway({
      config: enabled({
        agents: {
          defaults: { model: { primary: "t/m" }, models: { "t/m": { alias: "fast" } } },
          list: [{ id: "main", default: true }, { id: "research" }],
        },
      }),
    });
    const list = await client(g, READER).models.list();
    expect(list.data.map((m) => m.id)).toEqual(["loopgate/main", "loopgate/research", "fast"]);
    const one = await client(g, READER).models.retrieve("loopgate/research");
    expect(one.id).toBe("loopgate/research");
  });

  it("the model or the agent-id header picks the agent, and an alias runs the default agent with that model", async () => {
    const g = await gateway({
      config: enabled({
        agents: {
          defaults: { model: { primary: "t/m" }, models: { "t/m": { alias: "fast" }, "t/other": { alias: "other" } } },
          list: [{ id: "main", default: true }, { id: "research" }],
        },
      }),
    });
    const seen: string[] = [];
    g.provider.script = (req) => {
      seen.push(req.model);
      return { before: ["ok"] };
    };
    const openai = client(g, ADMIN);
    await openai.chat.completions.create({
      model: "loopgate/research",
      messages: [{ role: "user", content: "a" }],
      user: "u1",
    });
    await openai.chat.completions.create(
      { model: "anything", messages: [{ role: "user", content: "b" }], user: "u2" },
      { headers: { "x-openclaw-agent-id": "research" } },
    );
    await openai.chat.completions.create({ model: "other", messages: [{ role: "user", content: "c" }], user: "u3" });
    expect(seen).toEqual(["m", "m", "other"]);
    const peer = await connectedPeer(g.url, { token: ADMIN });
    const keys = (await peer.call("sessions.list", {})).payload?.sessions as Array<{ key: string }>;
    expect(keys.map((s) => s.key).sort()).toEqual([
      "agent:main:openai-user:u3",
      "agent:research:openai-user:u1",
      "agent:research:openai-user:u2",
    ]);
    peer.close();
  });

  it("a user's turns over HTTP and over the WebSocket protocol are one session: chat.history shows them all", async () => {
    const g = await gateway({ config: enabled() });
    const histories: number[] = [];
    g.provider.script = (req) => {
      histories.push(req.messages.filter((m) => m.role === "user").length);
      const last = [...req.messages].reverse().find((m) => m.role === "user");
      return { before: ["reply to ", String(last?.content ?? "")] };
    };
    const openai = client(g, ADMIN);
    const first = await openai.chat.completions.create({
      model: "loopgate/main",
      messages: [{ role: "user", content: "first over http" }],
      user: "alice",
    });
    expect(first.choices[0].message.content).toBe("reply to first over http");
    const peer = await connectedPeer(g.url, { token: ADMIN });
    const id = peer.send("agent", {
      message: "second over ws",
      idempotencyKey: "ws-2",
      sessionKey: "agent:main:openai-user:alice",
    });
    expect((await peer.response(id, 2)).payload?.status).toBe("ok");
    const third = await openai.chat.completions.create(
      {
        model: "loopgate/main",
        // earlier messages are not replayed: the session's transcript is the history
        messages: [
          { role: "user", content: "ignored, already in the transcript" },
          { role: "user", content: "third over http" },
        ],
      },
      { headers: { "x-openclaw-session-key": "agent:main:openai-user:alice" } },
    );
    expect(third.choices[0].message.content).toBe("reply to third over http");
    // the model saw 1, then 2, then 3 user messages: the session's own history, not the request's
    expect(histories).toEqual([1, 2, 3]);
    const history = await peer.call("chat.history", { sessionKey: "agent:main:openai-user:alice" });
    const texts = (
      (history.payload?.messages ?? []) as Array<{ role: string; content: string | Array<{ text?: string }> }>
    ).map(
      (m) => `${m.role}: ${typeof m.content === "string" ? m.content : m.content.map((c) => c.text ?? "").join("")}`,
    );
    expect(texts).toEqual([
      "user: first over http",
      "assistant: reply to first over http",
      "user: second over ws",
      "assistant: reply to second over ws",
      "user: third over http",
      "assistant: reply to third over http",
    ]);
    peer.close();
  });

  it("responses.create with previous_response_id continues that response's session", async () => {
    const g = await gateway({ config: enabled() });
    const users: number[] = [];
    g.provider.script = (req) => {
      users.push(req.messages.filter((m) => m.role === "user").length);
      return { before: [`turn ${users.length}`] };
    };
    const openai = client(g);
    const first = await openai.responses.create({ model: "loopgate/main", input: "remember 42" });
    const second = await openai.responses.create({
      model: "loopgate/main",
      input: "what did I ask you to remember?",
      previous_response_id: first.id,
    });
    expect(second.output_text).toBe("turn 2");
    // the second turn saw the first in its history: one session
    expect(users).toEqual([1, 2]);
  });

  it("system messages reach the run as extra system prompt", async () => {
    const g = await gateway({ config: enabled() });
    let system = "";
    g.provider.script = (req) => {
      system = req.system ?? "";
      return { before: ["ok"] };
    };
    await client(g).chat.completions.create({
      model: "loopgate/main",
      messages: [
        { role: "system", content: "Answer like a pirate." },
        { role: "user", content: "hi" },
      ],
    });
    expect(system).toContain("Answer like a pirate.");
  });

  it("a streamed completion shows the first deltas while the model is still producing the rest", async () => {
    const gate = deferred();
    const g = await gateway({
      config: enabled(),
      provider: new TestProvider(() => ({ before: ["first part"], gate: gate.promise, after: [" and the rest"] })),
    });
    const stream = await client(g).chat.completions.create({
      model: "loopgate/main",
      messages: [{ role: "user", content: "go" }],
      stream: true,
    });
    let text = "";
    let released = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (!released && text === "first part") {
        // the model is held at the gate: this text came before the run could end
        released = true;
        gate.resolve();
      }
    }
    expect(released).toBe(true);
    expect(text).toBe("first part and the rest");
  });

  it("a client that disconnects leaves its run running, unless it asked for x-loopgate-abort-on-disconnect", async () => {
    const gate = deferred();
    const g = await gateway({
      config: enabled(),
      provider: new TestProvider(() => ({ before: ["partial"], gate: gate.promise, after: [" done"] })),
    });
    const peer = await connectedPeer(g.url, { token: ADMIN });
    const runIdOf = async (headers: Record<string, string>) => {
      const controller = new AbortController();
      const res = await fetch(`${httpBase(g)}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${WRITER}`, ...headers },
        body: JSON.stringify({ model: "loopgate/main", messages: [{ role: "user", content: "x" }], stream: true }),
        signal: controller.signal,
      });
      const reader = res.body?.getReader();
      const first = new TextDecoder().decode((await reader?.read())?.value);
      const id = /"id":"chatcmpl-([^"]+)"/.exec(first)?.[1];
      controller.abort();
      return String(id);
    };
    const kept = await runIdOf({ "x-openclaw-session-key": "keep" });
    const aborted = await runIdOf({ "x-openclaw-session-key": "stop", "x-loopgate-abort-on-disconnect": "1" });
    const stopped = await peer.call("agent.wait", { runId: aborted, timeoutMs: 8000 });
    expect(stopped.payload?.status).toBe("error");
    expect(stopped.payload?.stopReason).toBe("aborted");
    gate.resolve();
    const finished = await peer.call("agent.wait", { runId: kept, timeoutMs: 8000 });
    expect(finished.payload?.status).toBe("ok");
    peer.close();
  });

  it("errors come in OpenAI's shape with the status a client acts on", async () => {
    const gate = deferred();
    const g = await gateway({
      config: enabled({
        messages: { queue: { mode: "followup", debounceMs: 0, cap: 1, drop: "new" } },
        limits: { tokens: { runsPerMinute: 1000 } },
        gateway: {
          http: { endpoints: { chatCompletions: { enabled: true }, responses: { enabled: true } } },
          auth: {
            tokens: [
              ...tokens,
              { token: "limited", scopes: ["operator.write"], sessions: ["*"], limits: { runsPerMinute: 1 } },
            ],
          },
        },
      }),
      provider: new TestProvider(() => ({ before: ["..."], gate: gate.promise })),
    });
    const chatBody = (content: string, extra: Record<string, unknown> = {}) => ({
      model: "loopgate/main",
      messages: [{ role: "user", content }],
      ...extra,
    });
    // 401: no token, a wrong one
    const none = await post(g, "/v1/chat/completions", chatBody("a"), { authorization: "" });
    expect(none.status).toBe(401);
    expect(none.body.error).toMatchObject({ type: "authentication_error", code: "invalid_api_key" });
    const wrong = await post(g, "/v1/chat/completions", chatBody("a"), { authorization: "Bearer nope" });
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(wrong.body)).not.toContain("nope");
    // 403: a read-only token may list models but not start a run; a tenant only in its own sessions
    const reader = await post(g, "/v1/chat/completions", chatBody("a"), { authorization: `Bearer ${READER}` });
    expect(reader.status).toBe(403);
    expect(reader.body.error?.message).toContain("operator.write");
    const tenantOther = await post(g, "/v1/chat/completions", chatBody("a", { user: "someone-else" }), {
      authorization: `Bearer ${TENANT}`,
    });
    expect(tenantOther.status).toBe(403);
    expect(tenantOther.body.error?.message).toContain("agent:main:openai-user:someone-else");
    // 400: bad JSON, a missing field, an unsupported one
    const badJson = await post(g, "/v1/chat/completions", "{not json");
    expect(badJson.status).toBe(400);
    expect(badJson.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_json" });
    const noMessages = await post(g, "/v1/chat/completions", { model: "loopgate/main" });
    expect(noMessages.status).toBe(400);
    expect(noMessages.body.error?.param).toBe("messages");
    const twoChoices = await post(g, "/v1/chat/completions", chatBody("a", { n: 2 }));
    expect(twoChoices.status).toBe(400);
    expect(twoChoices.body.error?.param).toBe("n");
    const tools = await post(
      g,
      "/v1/chat/completions",
      chatBody("a", { tools: [{ type: "function", function: { name: "f" } }] }),
    );
    expect(tools.status).toBe(400);
    expect(tools.body.error?.param).toBe("tools");
    // 404: an unknown model, an unknown agent
    const model = await post(g, "/v1/chat/completions", { ...chatBody("a"), model: "gpt-4o" });
    expect(model.status).toBe(404);
    expect(model.body.error).toMatchObject({ code: "model_not_found", param: "model" });
    expect(model.body.error?.message).toContain("loopgate/main");
    const agent = await post(g, "/v1/chat/completions", { ...chatBody("a"), model: "loopgate/nobody" });
    expect(agent.status).toBe(404);
    expect(agent.body.error?.message).toContain('unknown agent "nobody"');
    // 409: the session is busy and its queue (cap 1, drop "new") refuses more
    const peer = await connectedPeer(g.url, { token: ADMIN });
    const sessionExists = (key: string) =>
      expect
        .poll(async () => {
          const s = (await peer.call("sessions.list", {})).payload?.sessions as Array<{ key: string }>;
          return s.some((x) => x.key === key);
        })
        .toBe(true);
    const busy = { "x-openclaw-session-key": "busy" };
    const running = post(g, "/v1/chat/completions", chatBody("one"), busy);
    await sessionExists("agent:main:busy");
    // the second message waits in the queue: its accepted answer says so
    const queuedId = peer.send("agent", { message: "two", idempotencyKey: "q-2", sessionKey: "busy" });
    expect((await peer.response(queuedId, 1)).payload?.receipt).toMatchObject({ kind: "queued" });
    const refused = await post(g, "/v1/chat/completions", chatBody("three"), busy);
    expect(refused.status).toBe(409);
    expect(refused.body.error?.code).toBe("queue_full");
    expect(refused.headers.get("retry-after")).toBeTruthy();
    // 429: the token's runsPerMinute, with retry-after
    const limited = { authorization: "Bearer limited" };
    const firstRun = post(g, "/v1/chat/completions", chatBody("r1"), { ...limited, "x-openclaw-session-key": "rl-1" });
    await sessionExists("agent:main:rl-1");
    const rateLimited = await post(g, "/v1/chat/completions", chatBody("r2"), {
      ...limited,
      "x-openclaw-session-key": "rl-2",
    });
    expect(rateLimited.status).toBe(429);
    expect(rateLimited.body.error?.code).toBe("rate_limited");
    expect(Number(rateLimited.headers.get("retry-after"))).toBeGreaterThan(0);
    gate.resolve();
    expect((await running).status).toBe(200);
    expect((await firstRun).status).toBe(200);
    peer.close();
  });

  it("a run that fails is a 500 naming the run, and a failed stream ends with an error the openai client throws", async () => {
    const g = await gateway({
      config: enabled(),
      provider: new TestProvider(() => ({
        before: ["half an answer"],
        error: { kind: "bad_request", message: "the model refused the request" },
      })),
    });
    const plain = await post(g, "/v1/chat/completions", {
      model: "loopgate/main",
      messages: [{ role: "user", content: "x" }],
    });
    expect(plain.status).toBe(500);
    expect(plain.body.error).toMatchObject({ type: "server_error", code: "run_failed" });
    expect(plain.body.error?.message).toContain("the model refused the request");
    const stream = await client(g).chat.completions.create({
      model: "loopgate/main",
      messages: [{ role: "user", content: "y" }],
      stream: true,
    });
    let text = "";
    const reading = (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    })();
    await expect(reading).rejects.toThrow(/the model refused the request/);
    expect(text).toBe("half an answer");
    const events = await client(g).responses.create({ model: "loopgate/main", input: "z", stream: true });
    let failed: { status?: string; error?: { message?: string } | null } | undefined;
    for await (const ev of events) if (ev.type === "response.failed") failed = ev.response;
    expect(failed?.status).toBe("failed");
    expect(failed?.error?.message).toContain("the model refused the request");
  });

  it("a tenant's token works inside its own sessions, by user or by session header", async () => {
    const g = await gateway({ config: enabled() });
    const openai = client(g, TENANT);
    const byUser = await openai.chat.completions.create({
      model: "loopgate/main",
      messages: [{ role: "user", content: "mine" }],
      user: "tenant-7",
    });
    expect(byUser.choices[0].message.content).toBe("reply to mine");
    // a fresh session per request is outside its grants: it must name one of its own
    const fresh = await post(
      g,
      "/v1/chat/completions",
      { model: "loopgate/main", messages: [{ role: "user", content: "x" }] },
      { authorization: `Bearer ${TENANT}` },
    );
    expect(fresh.status).toBe(403);
  });

  it("gateway.http.endpoints: each endpoint answers only when enabled, /v1/models when either is, else 404 in OpenAI's error shape", async () => {
    const chatOnly = await gateway({ config: enabled({}, { chatCompletions: true, responses: false }) });
    const responses = await post(chatOnly, "/v1/responses", { model: "loopgate/main", input: "x" });
    expect(responses.status).toBe(404);
    expect(responses.body.error).toMatchObject({ code: "endpoint_disabled" });
    expect(responses.body.error?.message).toContain("gateway.http.endpoints.responses.enabled");
    const chat = await client(chatOnly).chat.completions.create({
      model: "loopgate/main",
      messages: [{ role: "user", content: "on" }],
    });
    expect(chat.choices[0].message.content).toBe("reply to on");
    expect((await client(chatOnly).models.list()).data.length).toBe(1);

    const off = await gateway({ config: { gateway: { auth: { tokens } } } });
    for (const path of ["/v1/chat/completions", "/v1/responses"]) {
      const r = await post(off, path, { model: "loopgate/main", messages: [], input: "x" });
      expect(r.status).toBe(404);
      expect(r.body.error?.type).toBe("not_found_error");
    }
    const models = await fetch(`${httpBase(off)}/v1/models`, { headers: { authorization: `Bearer ${WRITER}` } });
    expect(models.status).toBe(404);
  });
});
