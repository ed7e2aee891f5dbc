/*
 * MCP servers as tool sources of a real gateway: startGateway with mcp.servers in its config starts them (the same
 * line the CLI's `loopgate gateway` runs), real WebSocket clients, and @modelcontextprotocol/server-everything from
 * the npm registry as a child process (stdio) or on a loopback port (Streamable HTTP). The model is the harness's
 * TestProvider: it calls the tool, then answers with what the tool returned.
 */
import { execFileSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { contentText, type ModelRequest } from "../../src/providers/types.js";
import {
  type HttpServer,
  isAlive,
  startEverythingHttp,
  stdioEverything,
} from "../../src/tools/mcp/test-servers.test-support.js";
import {
  connectedPeer,
  type Frame,
  type RawPeer,
  TestProvider,
  type TestTurn,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();
const httpServers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(httpServers.splice(0).map((s) => s.stop()));
});

/** The model: first call `tool` with `args`, then answer with the last tool result's text; `requests` keeps what it got. */
function toolCallingModel(tool: string, args: Record<string, unknown>) {
  const requests: ModelRequest[] = [];
  const provider = new TestProvider((req): TestTurn => {
    requests.push(req);
    const last = req.messages.at(-1);
    if (last?.role !== "toolResult") return { toolCalls: [{ id: "call_mcp", name: tool, arguments: args }] };
    return { before: [`The tool said: ${contentText(last.content)}`] };
  });
  return { provider, requests };
}

async function mcpGateway(servers: Record<string, Record<string, unknown>>, provider: TestProvider) {
  const g = await gateway({ provider, config: { mcp: { servers } } });
  const peer = await connectedPeer(g.url, { scopes: ["operator.read", "operator.write", "operator.approvals"] });
  return { ...g, peer };
}

/** Polls `health` until every listed server has left "connecting"; returns that health answer. */
async function settledHealth(peer: RawPeer, servers: string[]): Promise<Record<string, unknown>> {
  const until = Date.now() + 15_000;
  while (true) {
    const health = (await peer.call("health")).payload as Record<string, unknown>;
    const mcp = (health.mcp ?? []) as Array<{ server: string; state: string }>;
    if (servers.every((name) => mcp.some((s) => s.server === name && s.state !== "connecting"))) return health;
    if (Date.now() > until) throw new Error(`MCP servers never settled: ${JSON.stringify(mcp)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const replyText = (final: Frame) =>
  ((final.payload?.result as { payloads?: Array<{ text?: string }> })?.payloads ?? []).map((p) => p.text).join("\n");

function toolResult(peer: RawPeer, runId: string): Record<string, unknown> | undefined {
  const frame = peer.all(
    (f) =>
      f.event === "agent" &&
      f.payload?.runId === runId &&
      f.payload?.stream === "tool" &&
      (f.payload?.data as { phase?: string })?.phase === "result",
  )[0];
  return frame?.payload?.data as Record<string, unknown> | undefined;
}

/** The pids of this process's children whose command line mentions server-everything. */
function everythingChildren(): number[] {
  const out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(process.pid)], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((l) => l.includes("server-everything"))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

describe("MCP tools in gateway runs", () => {
  it("a run whose model calls everything__echo (server-everything over stdio) replies with the echoed text", async () => {
    const { provider, requests } = toolCallingModel("everything__echo", { message: "hello through the gateway" });
    const { peer, gw } = await mcpGateway({ everything: stdioEverything() }, provider);
    const health = await settledHealth(peer, ["everything"]);
    console.log(`health.mcp: ${JSON.stringify(health.mcp)}`);
    expect(health).toMatchObject({ ok: true, mcp: [{ server: "everything", transport: "stdio", state: "ready" }] });

    const sent = peer.send("agent", { message: "echo something", idempotencyKey: "mcp-stdio" });
    const final = await peer.response(sent, 2);
    console.log(`reply: ${replyText(final)}`);
    expect(requests[0]?.tools?.map((t) => t.name)).toContain("everything__echo");
    expect(final.payload).toMatchObject({ runId: "mcp-stdio", status: "ok" });
    expect(replyText(final)).toBe("The tool said: Echo: hello through the gateway");

    // every stdio child is gone once the gateway's close() resolves
    const children = everythingChildren();
    console.log(`server-everything children before close: ${children.join(", ")}`);
    expect(children.length).toBeGreaterThan(0);
    await gw.close();
    expect(children.filter(isAlive)).toEqual([]);
  });

  it("the same over Streamable HTTP: the reply carries the echo", async () => {
    const http = await startEverythingHttp("streamableHttp");
    httpServers.push(http);
    const { provider } = toolCallingModel("everything__echo", { message: "hello over HTTP" });
    const { peer } = await mcpGateway({ everything: { url: http.url } }, provider);
    const health = await settledHealth(peer, ["everything"]);
    expect(health).toMatchObject({ mcp: [{ server: "everything", transport: "streamable-http", state: "ready" }] });

    const final = await peer.response(peer.send("agent", { message: "echo", idempotencyKey: "mcp-http" }), 2);
    console.log(`reply: ${replyText(final)}`);
    expect(replyText(final)).toBe("The tool said: Echo: hello over HTTP");
  });

  it("with one server that fails to start, health is degraded naming it, and a run using the healthy one succeeds", async () => {
    const { provider } = toolCallingModel("everything__echo", { message: "still here" });
    const { peer } = await mcpGateway(
      {
        everything: stdioEverything(),
        broken: { command: process.execPath, args: ["-e", "process.exit(3)"], connectionTimeoutMs: 5000 },
      },
      provider,
    );
    const health = await settledHealth(peer, ["everything", "broken"]);
    console.log(
      `health: ok=${health.ok} degraded=${JSON.stringify(health.degraded)} mcp=${JSON.stringify(health.mcp)}`,
    );
    expect(health).toMatchObject({
      ok: false,
      degraded: { reason: "mcp server failed", servers: ["broken"] },
      mcp: [
        { server: "everything", state: "ready" },
        { server: "broken", state: "failed" },
      ],
    });
    const status = (await peer.call("mcp.status")).payload as { servers: Array<{ server: string; state: string }> };
    expect(status.servers.map((s) => [s.server, s.state])).toEqual([
      ["everything", "ready"],
      ["broken", "failed"],
    ]);

    const final = await peer.response(peer.send("agent", { message: "echo", idempotencyKey: "mcp-unrelated" }), 2);
    expect(final.payload).toMatchObject({ status: "ok" });
    expect(replyText(final)).toBe("The tool said: Echo: still here");
  });
});

describe("MCP tools that wait for approval", () => {
  const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
  const args = { message: `deploy with ${secret}` };
  const isRequested = (f: Frame) => f.type === "event" && f.event === "exec.approval.requested";

  async function approvalRun(runId: string) {
    const { provider } = toolCallingModel("everything__echo", args);
    const { peer } = await mcpGateway({ everything: stdioEverything({ approval: "always" }) }, provider);
    await settledHealth(peer, ["everything"]);
    const sent = peer.send("agent", { message: "echo it", idempotencyKey: runId });
    const requested = (await peer.next(isRequested, "the approval request")).payload!;
    return { peer, sent, requested };
  }

  it("the run waits; exec.approval.list shows the tool and its arguments (secrets redacted); allow-once lets the call through", async () => {
    const { peer, sent, requested } = await approvalRun("mcp-allow");
    console.log(`requested: ${JSON.stringify(requested)}`);
    expect(requested).toMatchObject({
      kind: "tool",
      tool: "everything__echo",
      args: { message: "deploy with [redacted]" },
      runId: "mcp-allow",
      toolCallId: "call_mcp",
    });
    expect(String(requested.command)).toMatch(/^everything__echo \{"message":"deploy with \[redacted\]"\}$/);
    const list = (await peer.call("exec.approval.list")).payload as { approvals: unknown[] };
    expect(list.approvals).toEqual([requested]);
    expect(JSON.stringify(peer.frames)).not.toContain(secret);
    // nothing ran yet: the run is still waiting
    expect(toolResult(peer, "mcp-allow")).toBeUndefined();

    const answer = await peer.call("exec.approval.resolve", { id: requested.id, decision: "allow-once" });
    expect(answer.payload).toMatchObject({ status: "allowed", decision: "allow-once" });
    const final = await peer.response(sent, 2);
    console.log(`reply: ${replyText(final)}`);
    expect(replyText(final)).toBe(`The tool said: Echo: deploy with ${secret}`);
  });

  it("a denial is a tool error the model sees, and the run goes on", async () => {
    const { peer, sent, requested } = await approvalRun("mcp-deny");
    await peer.call("exec.approval.resolve", { id: requested.id, decision: "deny" });
    const final = await peer.response(sent, 2);
    console.log(`tool result: ${JSON.stringify(toolResult(peer, "mcp-deny"))}`);
    expect(toolResult(peer, "mcp-deny")).toMatchObject({
      isError: true,
      result: "everything__echo denied: an operator denied the call",
    });
    expect(final.payload).toMatchObject({ status: "ok" });
    expect(replyText(final)).toBe("The tool said: everything__echo denied: an operator denied the call");
  });
});
