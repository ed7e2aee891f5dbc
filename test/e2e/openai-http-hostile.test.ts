/*
 * The OpenAI-compatible HTTP API (SPEC 26) under hostile clients, over a real gateway on loopback and raw sockets:
 * bad JSON, a body over the limit (declared or streamed), a body that never finishes (slowloris), JSON built to be
 * expensive to parse, unknown agents, a tenant's token reaching for another session, more concurrent requests than
 * the token's cap, a disabled endpoint. Each is refused with a clear error, nothing is stored for it, and the
 * gateway goes on answering the next ordinary request.
 */
import net from "node:net";
import { describe, expect, it } from "vitest";
import {
  connectedPeer,
  deferred,
  type RawPeer,
  type TestGateway,
  TestProvider,
  useTestGateways,
  WAIT_MS,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

const WRITER = "writer-token";
const TENANT = "tenant-token";
const ADMIN = "admin-token";
const MAX_PAYLOAD = 64 * 1024;
const BODY_TIMEOUT_MS = 300;

const config = (extra: Record<string, unknown> = {}) => ({
  gateway: {
    http: { endpoints: { chatCompletions: { enabled: true }, responses: { enabled: true } } },
    auth: {
      tokens: [
        { token: WRITER, scopes: ["operator.write"], sessions: ["*"] },
        { token: TENANT, scopes: ["operator.write"], sessions: ["agent:main:tenant-a-*"] },
        { token: ADMIN, scopes: ["operator.admin", "operator.read", "operator.write"], sessions: ["*"] },
      ],
    },
    ...extra,
  },
});

async function hostileGateway(opts: Parameters<typeof gateway>[0] = {}): Promise<TestGateway> {
  return gateway({
    config: config(),
    gateway: { maxPayload: MAX_PAYLOAD, handshakeTimeoutMs: BODY_TIMEOUT_MS },
    ...opts,
  });
}

/** One raw HTTP exchange on its own socket: what the gateway answers, and whether it then closed the socket. */
function rawExchange(
  port: number,
  write: (socket: net.Socket) => void,
): Promise<{ status: number; body: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let data = "";
    const timer = setTimeout(() => reject(new Error(`no answer: ${data}`)), WAIT_MS);
    socket.on("error", () => {});
    socket.on("data", (d) => {
      data += d.toString("utf8");
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
      resolve({ status, body: data.slice(data.indexOf("\r\n\r\n") + 4), closed: true });
    });
    socket.on("connect", () => write(socket));
  });
}

function head(path: string, headers: Record<string, string | number>): string {
  const lines = Object.entries({ host: "127.0.0.1", authorization: `Bearer ${WRITER}`, ...headers }).map(
    ([k, v]) => `${k}: ${v}`,
  );
  return `POST ${path} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`;
}

async function post(g: TestGateway, body: string | object, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${g.gw.port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${WRITER}`, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { error?: { message: string; code?: string } } };
}

async function sessionKeys(peer: RawPeer): Promise<string[]> {
  const sessions = (await peer.call("sessions.list", {})).payload?.sessions as Array<{ key: string }> | undefined;
  return (sessions ?? []).map((s) => s.key);
}

const ask = (content: string) => ({ model: "loopgate/main", messages: [{ role: "user", content }] });

/** an ordinary request still gets its answer */
async function stillServes(g: TestGateway): Promise<void> {
  const ok = await post(g, ask("still there?"));
  expect(ok.status).toBe(200);
}

describe("the OpenAI-compatible HTTP API against hostile clients", () => {
  it("bad JSON and bodies that are not a chat request are 400s naming what is wrong, and nothing runs", async () => {
    const g = await hostileGateway();
    for (const body of ["", "{", "[1,2]", "null", '{"model":"loopgate/main","messages":"hi"}', "\u0000\u0001"]) {
      const r = await post(g, body);
      expect(r.status, body).toBe(400);
      expect(r.body.error?.message.length).toBeGreaterThan(0);
    }
    expect(g.provider.calls).toBe(0);
    await stillServes(g);
  });

  it("a body over gateway.maxPayload is refused with 413, declared or streamed, and the socket is closed", async () => {
    const g = await hostileGateway();
    const declared = await rawExchange(g.gw.port, (s) =>
      s.write(head("/v1/chat/completions", { "content-type": "application/json", "content-length": 10 * MAX_PAYLOAD })),
    );
    expect(declared.status).toBe(413);
    expect(declared.body).toContain("gateway.maxPayload");
    const streamed = await rawExchange(g.gw.port, (s) => {
      s.write(head("/v1/chat/completions", { "content-type": "application/json", "transfer-encoding": "chunked" }));
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      // the client keeps sending well past the limit; the gateway answers once it passes it
      for (let i = 0; i < 12; i++) s.write(`${chunk.length.toString(16)}\r\n${chunk.toString("latin1")}\r\n`);
    });
    expect(streamed.status).toBe(413);
    expect(streamed.closed).toBe(true);
    expect(g.provider.calls).toBe(0);
    await stillServes(g);
  });

  it("a body that never finishes (slowloris) is answered 408 and its socket closed; an unauthenticated one is refused before any byte of it is read", async () => {
    const g = await hostileGateway();
    const slow = await rawExchange(g.gw.port, (s) => {
      s.write(head("/v1/chat/completions", { "content-type": "application/json", "content-length": 1000 }));
      s.write('{"model":"loopgate/ma');
    });
    expect(slow.status).toBe(408);
    expect(slow.body).toContain("did not arrive");
    const anonymous = await rawExchange(g.gw.port, (s) => {
      s.write(
        head("/v1/chat/completions", {
          authorization: "Bearer wrong",
          "content-type": "application/json",
          "content-length": 1000,
        }),
      );
      s.write('{"model":');
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).not.toContain("wrong");
    await stillServes(g);
  });

  it("JSON built to be expensive to parse is refused from its first bytes", async () => {
    const g = await hostileGateway();
    const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`;
    const r = await post(g, `{"model":"loopgate/main","messages":${deep}}`);
    expect(r.status).toBe(400);
    expect(r.body.error?.code).toBe("body_too_complex");
    await stillServes(g);
  });

  it("unknown agents are 404s, by model and by header, and create no session", async () => {
    const g = await hostileGateway();
    const byModel = await post(g, { ...ask("x"), model: "loopgate/../../etc" });
    expect(byModel.status).toBe(404);
    const byHeader = await post(g, { ...ask("x"), model: "loopgate" }, { "x-openclaw-agent-id": "ghost" });
    expect(byHeader.status).toBe(404);
    expect(byHeader.body.error?.message).toContain('unknown agent "ghost"');
    const peer = await connectedPeer(g.url, { token: ADMIN });
    expect(await sessionKeys(peer)).toEqual([]);
    peer.close();
  });

  it("a session-limited token is refused every session outside its grant, by header, user or previous response, and nothing is stored", async () => {
    const g = await hostileGateway();
    const tenant = { authorization: `Bearer ${TENANT}` };
    const own = await post(g, ask("mine"), { ...tenant, "x-openclaw-session-key": "tenant-a-1" });
    expect(own.status).toBe(200);
    const other = await post(g, ask("theirs"), { ...tenant, "x-openclaw-session-key": "agent:main:tenant-b-1" });
    expect(other.status).toBe(403);
    expect(other.body.error?.message).toContain("agent:main:tenant-b-1");
    const byUser = await post(g, { ...ask("theirs"), user: "tenant-b" }, tenant);
    expect(byUser.status).toBe(403);
    // a response id of another tenant's session does not carry the request into it
    const writerRun = await fetch(`http://127.0.0.1:${g.gw.port}/v1/responses`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${WRITER}`,
        "x-openclaw-session-key": "private",
      },
      body: JSON.stringify({ model: "loopgate/main", input: "secret work" }),
    });
    const { id } = (await writerRun.json()) as { id: string };
    const follow = await fetch(`http://127.0.0.1:${g.gw.port}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TENANT}` },
      body: JSON.stringify({ model: "loopgate/main", input: "continue", previous_response_id: id }),
    });
    expect(follow.status).toBe(404);
    expect(await follow.text()).not.toContain("private");
    const peer = await connectedPeer(g.url, { token: ADMIN });
    const keys = (await sessionKeys(peer)).sort();
    expect(keys).toEqual(["agent:main:private", "agent:main:tenant-a-1"]);
    peer.close();
  });

  it("requests past gateway.maxConnectionsPerToken wait their turn: 429 with retry-after, and the others finish", async () => {
    const gate = deferred();
    const g = await gateway({
      config: config({ maxConnectionsPerToken: 2 }),
      provider: new TestProvider(() => ({ before: ["held"], gate: gate.promise })),
    });
    const open = [1, 2].map((i) => post(g, ask(`held ${i}`), { "x-openclaw-session-key": `cap-${i}` }));
    const peer = await connectedPeer(g.url, { token: ADMIN });
    await expect.poll(async () => (await sessionKeys(peer)).length).toBe(2);
    const third = await fetch(`http://127.0.0.1:${g.gw.port}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${WRITER}` },
      body: JSON.stringify(ask("one too many")),
    });
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toBe("1");
    expect(((await third.json()) as { error: { message: string } }).error.message).toContain(
      "gateway.maxConnectionsPerToken",
    );
    gate.resolve();
    for (const r of await Promise.all(open)) expect(r.status).toBe(200);
    peer.close();
  });

  it("on a gateway without a token, a page of another origin gets no tokenless grant: 403, and nothing runs", async () => {
    const g = await gateway({
      config: {
        gateway: { http: { endpoints: { chatCompletions: { enabled: true }, responses: { enabled: false } } } },
      },
    });
    const fromPage = await post(g, ask("from a web page"), { authorization: "", origin: "https://evil.example" });
    expect(fromPage.status).toBe(403);
    expect(fromPage.body.error?.code).toBe("origin_refused");
    expect(fromPage.body.error?.message).toContain("gateway.allowedOrigins");
    expect(g.provider.calls).toBe(0);
    // a local program (no Origin) has the full grant, as a WebSocket client on this gateway has
    const local = await post(g, ask("from a script"), { authorization: "" });
    expect(local.status).toBe(200);
  });

  it("with the endpoints off, /v1 paths are 404 in OpenAI's shape and no body is read", async () => {
    const g = await gateway({
      config: { gateway: { auth: { tokens: [{ token: WRITER, scopes: ["operator.write"], sessions: ["*"] }] } } },
    });
    const r = await rawExchange(g.gw.port, (s) => {
      s.write(head("/v1/chat/completions", { "content-type": "application/json", "content-length": 100_000_000 }));
    });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error.code).toBe("endpoint_disabled");
  });
});
