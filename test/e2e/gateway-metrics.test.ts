/*
 * GET /metrics as a Prometheus server meets it (SPEC 26, issue 32): a real gateway on loopback, the OpenAI Chat
 * Completions provider against the fake model server over real HTTP, real WebSocket clients making runs, and every
 * scrape read by a strict Prometheus text-format reader (test/fixtures/prometheus-text.ts).
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { GatewayStartError } from "../../src/gateway/errors.js";
import { type GatewayHandle, startGateway } from "../../src/gateway/server.js";
import { silentLogger } from "../../src/infra/logger.js";
import { type FakeModelServer, type FakeTurn, startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import { connectedPeer, type RawPeer, removeTempDirs, tempStateDir, WAIT_MS } from "../fixtures/gateway/harness.js";
import { type Family, parsePrometheusText, samplesOf, sampleValue } from "../fixtures/prometheus-text.js";

/** $10 per million input tokens, $30 per million output. */
const PRICE = { input: 10, output: 30, cacheRead: 0, cacheWrite: 0 };

const gateways: GatewayHandle[] = [];
const servers: FakeModelServer[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
afterAll(() => removeTempDirs());

async function fakeModel(respond?: (body: Record<string, unknown>) => FakeTurn): Promise<FakeModelServer> {
  const server = await startFakeModelServer({
    respond: (r) => respond?.(r.body) ?? { text: ["Hello", " there."], usage: { input: 100, output: 20 } },
  });
  servers.push(server);
  return server;
}

async function metricsGateway(server: FakeModelServer, config: Record<string, unknown> = {}): Promise<GatewayHandle> {
  const { gateway, ...rest } = config as { gateway?: Record<string, unknown> };
  const gw = await startGateway({
    config: parseConfig({
      agents: { defaults: { model: { primary: "fake/m" } } },
      models: {
        providers: {
          fake: {
            api: "openai-completions",
            baseUrl: server.baseUrl,
            apiKey: "sk-test",
            models: [{ id: "m", cost: PRICE }],
          },
        },
      },
      gateway: { metrics: { enabled: true }, ...gateway },
      ...rest,
    }),
    stateDir: tempStateDir(),
    port: 0,
    host: "127.0.0.1",
    tickIntervalMs: 60_000,
    logger: silentLogger,
  });
  gateways.push(gw);
  return gw;
}

const httpBase = (gw: GatewayHandle) => gw.url.replace(/^ws:/, "http:");

async function scrape(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Scrapes until `done` holds for the parsed text (a condition that becomes true on its own), for up to WAIT_MS. */
async function scrapeUntil(url: string, done: (m: Map<string, Family>) => boolean, what: string) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const m = parsePrometheusText((await scrape(url)).text);
    if (done(m)) return m;
    if (Date.now() > deadline) throw new Error(`never seen in a scrape: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One `agent` request, waited for to its final answer. */
async function run(peer: RawPeer, key: string, message: string, sessionKey: string) {
  const id = peer.send("agent", { message, idempotencyKey: key, sessionKey });
  expect((await peer.response(id)).ok).toBe(true);
  return peer.response(id, 2);
}

describe("a scrape after a few runs", () => {
  it("counts the runs by status, the model calls by outcome, and exactly the tokens and cost the model reported", {
    timeout: 30_000,
  }, async () => {
    const server = await fakeModel((body) => {
      const text = JSON.stringify(body.messages);
      if (text.includes("break please")) {
        return {
          error: { status: 400, body: { error: { message: "no", type: "invalid_request_error", code: null } } },
        };
      }
      if (text.includes("look it up") && !text.includes('"role":"tool"')) {
        return { toolCalls: [{ name: "read", arguments: { path: "missing.txt" } }], usage: { input: 150, output: 10 } };
      }
      return { text: ["Hello", " there."], usage: { input: 100, output: 20 } };
    });
    const gw = await metricsGateway(server);
    const peer = await connectedPeer(gw.url, { scopes: ["operator.admin"] });
    expect((await run(peer, "run-secret-1", "hello", "agent:main:session-secret-a")).payload).toMatchObject({
      status: "ok",
    });
    expect((await run(peer, "run-secret-2", "look it up", "agent:main:session-secret-b")).payload).toMatchObject({
      status: "ok",
    });
    expect((await run(peer, "run-secret-3", "break please", "agent:main:session-secret-c")).payload).toMatchObject({
      status: "error",
    });
    expect(gw.metricsUrl).toBe(`${httpBase(gw)}/metrics`);

    const res = await scrape(`${httpBase(gw)}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const m = parsePrometheusText(res.text);
    process.stdout.write(`scrape: ${res.text.length} bytes, ${m.size} families, parsed\n`);

    expect(sampleValue(m, "loopgate_runs_total", { agent: "main", status: "ok" })).toBe(2);
    expect(sampleValue(m, "loopgate_runs_total", { agent: "main", status: "error" })).toBe(1);
    expect(sampleValue(m, "loopgate_run_duration_seconds_count", { agent: "main", status: "ok" })).toBe(2);
    // the failed run streamed no text: two first tokens
    expect(sampleValue(m, "loopgate_run_time_to_first_token_seconds_count", { agent: "main" })).toBe(2);

    // 4 model calls: the text, the tool call and its follow-up, the refusal
    const call = { provider: "fake", model: "m" };
    expect(sampleValue(m, "loopgate_model_calls_total", { ...call, outcome: "ok" })).toBe(3);
    expect(sampleValue(m, "loopgate_model_calls_total", { ...call, outcome: "bad_request" })).toBe(1);
    expect(sampleValue(m, "loopgate_model_call_duration_seconds_count", call)).toBe(4);
    const reported = server.requests.length;
    expect(reported).toBe(4);
    // what the fake model reported: 100/20 + 150/10 + 100/20
    expect(sampleValue(m, "loopgate_model_tokens_total", { ...call, type: "input" })).toBe(350);
    expect(sampleValue(m, "loopgate_model_tokens_total", { ...call, type: "output" })).toBe(50);
    expect(sampleValue(m, "loopgate_model_cost_usd_total", call)).toBeCloseTo((350 * 10 + 50 * 30) / 1e6, 9);
    expect(sampleValue(m, "loopgate_tool_calls_total", { outcome: "error" })).toBe(1);

    // gauges read at scrape time
    expect(sampleValue(m, "loopgate_connected_clients")).toBe(1);
    expect(sampleValue(m, "loopgate_active_runs")).toBe(0);
    expect(sampleValue(m, "loopgate_lane_queued_runs", { lane: "session" })).toBe(0);
    expect(sampleValue(m, "loopgate_lane_active_runs", { lane: "main" })).toBe(0);
    // the store's latency, by method; the process's own metrics under their standard names
    expect(sampleValue(m, "loopgate_store_call_duration_seconds_count", { method: "acceptInput", outcome: "ok" })).toBe(
      3,
    );
    expect(sampleValue(m, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(samplesOf(m, "nodejs_eventloop_lag_p99_seconds")).toHaveLength(1);
    // SQLite is one node: no leases
    expect(m.has("loopgate_cluster_leases_held")).toBe(false);
    // every family has help; no label carries a session key, run id or message
    for (const f of m.values()) expect(f.help, f.name).toBeTruthy();
    for (const secret of ["secret", "hello", "look it up", "break please", "sk-test"]) {
      expect(res.text).not.toContain(secret);
    }
    peer.close();
  });

  it("off by default: /metrics is not found, and nothing is measured", async () => {
    const server = await fakeModel();
    const gw = await metricsGateway(server, { gateway: { metrics: { enabled: false } } });
    expect(gw.metricsUrl).toBeUndefined();
    expect((await scrape(`${httpBase(gw)}/metrics`)).status).toBe(404);
    expect((await scrape(`${httpBase(gw)}/api/diagnostics/prometheus`)).status).toBe(404);
  });
});

describe.skipIf(!testPostgresUrl)("a gateway node on Postgres", () => {
  let ts: TestSchema | undefined;
  afterAll(async () => {
    await ts?.drop();
  });

  it("while a run is going, counts the lease of its session, the cron leader role, the run and its lane", {
    timeout: 30_000,
  }, async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    // the model would answer after a minute: the run is going while the test scrapes, then it is aborted
    const server = await fakeModel();
    const gw = await metricsGateway(server, {
      storage: { backend: "postgres", postgres: { url: testPostgresUrl, schema: ts.schema } },
    });
    server.enqueue({ text: "slow", delayMs: 60_000 });
    const peer = await connectedPeer(gw.url, { scopes: ["operator.admin"] });
    const id = peer.send("agent", { message: "hold on", idempotencyKey: "pg-1", sessionKey: "agent:main:pg" });
    expect((await peer.response(id)).ok).toBe(true);
    await peer.seen(
      (f) => f.event === "agent" && f.payload?.runId === "pg-1" && f.payload?.stream === "lifecycle",
      "the run's start",
    );
    // the cron leader role is claimed on the node's first beat, which runs beside the turn: wait for it
    const during = await scrapeUntil(
      `${httpBase(gw)}/metrics`,
      (m) => sampleValue(m, "loopgate_cluster_leases_held", { kind: "role" }) === 1,
      "the node holds the cron leader role",
    );
    expect(sampleValue(during, "loopgate_cluster_leases_held", { kind: "session" })).toBe(1);
    expect(sampleValue(during, "loopgate_active_runs")).toBe(1);
    expect(sampleValue(during, "loopgate_lane_active_runs", { lane: "session" })).toBe(1);
    expect(sampleValue(during, "loopgate_lane_active_runs", { lane: "main" })).toBe(1);
    expect(
      sampleValue(during, "loopgate_store_call_duration_seconds_count", { method: "acceptInput", outcome: "ok" }),
    ).toBe(1);
    const abort = peer.send("chat.abort", { sessionKey: "agent:main:pg", runId: "pg-1" });
    expect((await peer.response(abort)).ok).toBe(true);
    // on the wire an aborted run is status "error", summary "aborted"; its lifecycle status is "aborted"
    expect((await peer.response(id, 2)).payload).toMatchObject({ summary: "aborted" });
    const after = parsePrometheusText((await scrape(`${httpBase(gw)}/metrics`)).text);
    expect(sampleValue(after, "loopgate_runs_total", { agent: "main", status: "aborted" })).toBe(1);
    expect(sampleValue(after, "loopgate_active_runs")).toBe(0);
    peer.close();
  });
});

describe("who may scrape (SPEC 21)", () => {
  const tokens = [
    { token: "read-all", scopes: ["operator.read"], sessions: ["*"] },
    { token: "write-only", scopes: ["operator.write"], sessions: ["*"] },
    { token: "tenant-read", scopes: ["operator.read"], sessions: ["agent:main:tenant-a-*"] },
    { token: "admin", scopes: ["operator.admin"], sessions: ["*"] },
  ];

  it("with tokens: none or a wrong one is 401, a write-only or one tenant's token 403, a read token for every session 200", async () => {
    const gw = await metricsGateway(await fakeModel(), { gateway: { auth: { tokens } } });
    const url = `${httpBase(gw)}/metrics`;
    const as = (token?: string) => scrape(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});

    const none = await as();
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(JSON.parse(none.text).error).toMatch(/Authorization: Bearer <token> required/);
    expect((await as("wrong")).status).toBe(401);
    const writer = await as("write-only");
    expect(writer.status).toBe(403);
    expect(JSON.parse(writer.text).error).toMatch(/operator.read or operator.admin for every session/);
    expect((await as("tenant-read")).status).toBe(403);
    for (const ok of ["read-all", "admin"]) {
      const res = await as(ok);
      expect(res.status, ok).toBe(200);
      expect(parsePrometheusText(res.text).has("loopgate_runs_total")).toBe(true);
    }
    // OpenClaw's scrape path answers the same
    const openclaw = await scrape(`${httpBase(gw)}/api/diagnostics/prometheus`, {
      headers: { authorization: "Bearer read-all" },
    });
    expect(openclaw.status).toBe(200);
    // no token ever appears in the text
    for (const t of tokens) expect(openclaw.text).not.toContain(t.token);
  });

  it("gateway.metrics.port: /metrics is served there, and not on the gateway's port", async () => {
    const gw = await metricsGateway(await fakeModel(), { gateway: { metrics: { enabled: true, port: 0 } } });
    const metricsUrl = gw.metricsUrl ?? "";
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(metricsUrl).port).not.toBe(String(gw.port));
    const there = await scrape(metricsUrl);
    expect(there.status).toBe(200);
    expect(parsePrometheusText(there.text).has("loopgate_connected_clients")).toBe(true);
    expect((await scrape(`${httpBase(gw)}/metrics`)).status).toBe(404);
    expect((await scrape(metricsUrl.replace(/\/metrics$/, "/health"))).status).toBe(404);
    // a DNS-rebound page's request (a foreign Host) is refused there too
    const rebound = await fetchWithHost(metricsUrl, "evil.example");
    expect(rebound).toBe(421);
  });

  it("a metrics port beyond loopback without a token is refused at start, naming the keys to set", async () => {
    const err = await metricsGateway(await fakeModel(), {
      gateway: { metrics: { enabled: true, port: 0, bind: "lan" } },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayStartError);
    expect((err as Error).message).toMatch(/refusing to serve metrics on 0\.0\.0\.0 without authentication/);
  });
});

/** A GET with a Host header of our choosing (fetch sets Host from the URL): node:http lets the test set it. */
async function fetchWithHost(url: string, host: string): Promise<number> {
  const http = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
  });
}

describe("hostile scrapers", () => {
  it("a POST, PUT or DELETE is 405 (GET or HEAD), on the gateway's port and on a metrics port of its own", async () => {
    const server = await fakeModel();
    const onGateway = await metricsGateway(server);
    const ownPort = await metricsGateway(server, { gateway: { metrics: { enabled: true, port: 0 } } });
    for (const url of [`${httpBase(onGateway)}/metrics`, ownPort.metricsUrl ?? ""]) {
      for (const method of ["POST", "PUT", "DELETE"]) {
        const res = await scrape(url, { method, body: method === "DELETE" ? undefined : "x".repeat(100_000) });
        expect(res.status, `${method} ${url}`).toBe(405);
        expect(res.headers.get("allow")).toBe("GET, HEAD");
      }
      const head = await scrape(url, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.text).toBe("");
    }
  });

  it("300 scrapes at once are all answered with the whole text, and a run started meanwhile completes", {
    timeout: 30_000,
  }, async () => {
    const gw = await metricsGateway(await fakeModel());
    const peer = await connectedPeer(gw.url, { scopes: ["operator.admin"] });
    const url = `${httpBase(gw)}/metrics?from=hostile`;
    const scrapes = Array.from({ length: 300 }, () => scrape(url));
    const turn = run(peer, "during-scrapes", "hello", "agent:main:busy");
    const results = await Promise.all(scrapes);
    expect((await turn).payload).toMatchObject({ status: "ok" });
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(parsePrometheusText(r.text).has("loopgate_runs_total")).toBe(true);
    }
    const after = parsePrometheusText((await scrape(url)).text);
    expect(sampleValue(after, "loopgate_runs_total", { agent: "main", status: "ok" })).toBe(1);
    expect((await scrape(`${httpBase(gw)}/health`)).status).toBe(200);
    peer.close();
  });
  it("a burst of 200 connections on a metrics port of its own: each is answered whole or refused, and the port serves on", {
    timeout: 30_000,
  }, async () => {
    const gw = await metricsGateway(await fakeModel(), { gateway: { metrics: { enabled: true, port: 0 } } });
    const url = gw.metricsUrl ?? "";
    // the port keeps a bounded number of sockets: beyond it a connection is closed at once, never queued
    const results = await Promise.all(
      Array.from({ length: 200 }, () =>
        scrape(url).then(
          (r) => r,
          () => undefined,
        ),
      ),
    );
    const answered = results.filter((r) => r !== undefined);
    expect(answered.length).toBeGreaterThan(0);
    for (const r of answered) {
      expect(r.status).toBe(200);
      expect(parsePrometheusText(r.text).has("loopgate_runs_total")).toBe(true);
    }
    process.stdout.write(`metrics port burst: ${answered.length} of 200 answered, the rest refused\n`);
    expect((await scrape(url)).status).toBe(200);
  });
});

describe("the test's own Prometheus reader", () => {
  it("refuses what Prometheus would refuse: undeclared families, bad names, non-cumulative buckets, +Inf not the count", () => {
    const good = '# HELP a_total x\n# TYPE a_total counter\na_total{k="v"} 1\n';
    expect(parsePrometheusText(good).get("a_total")?.samples).toHaveLength(1);
    expect(() => parsePrometheusText("b 1\n")).toThrow(/no family declared/);
    expect(() => parsePrometheusText("# TYPE 1bad counter\n")).toThrow(/invalid metric name/);
    expect(() => parsePrometheusText('# TYPE a counter\na{1k="v"} 1\n')).toThrow(/invalid label name/);
    expect(() => parsePrometheusText("# TYPE a counter\na one\n")).toThrow(/invalid value/);
    expect(() => parsePrometheusText(good.trimEnd())).toThrow(/newline/);
    const hist = (b1: number, inf: number, count: number) =>
      `# TYPE h histogram\nh_bucket{le="1"} ${b1}\nh_bucket{le="+Inf"} ${inf}\nh_sum 3\nh_count ${count}\n`;
    expect(() => parsePrometheusText(hist(1, 2, 2))).not.toThrow();
    expect(() => parsePrometheusText(hist(3, 2, 2))).toThrow(/not cumulative/);
    expect(() => parsePrometheusText(hist(1, 2, 5))).toThrow(/is not _count/);
    expect(() => parsePrometheusText('# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n')).toThrow(
      /no le="\+Inf"/,
    );
  });
});
