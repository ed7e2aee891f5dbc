// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the tests write "${ENV}" references as a config does
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../infra/clock.js";
import type { ToolContext } from "../types.js";
import { formatMcpListJson, formatMcpListText } from "./format.js";
import { McpToolSource, type McpToolSourceOptions } from "./source.js";
import {
  FILESYSTEM,
  FIXTURE_SERVER,
  freePort,
  type HttpServer,
  isAlive,
  MEMORY,
  mcpServers,
  startEverythingHttp,
  stdioEverything,
  waitFor,
} from "./test-servers.test-support.js";

/*
 * The MCP tool source against real MCP servers: @modelcontextprotocol/server-everything (stdio, Streamable HTTP and
 * legacy SSE), server-memory, and the SDK-built list_changed fixture, each a real child process on loopback.
 */

const sources: McpToolSource[] = [];
const httpServers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.close()));
  await Promise.all(httpServers.splice(0).map((s) => s.stop()));
});

/** Fast retries so reconnect tests take milliseconds: 20 ms doubling to 200 ms, no jitter. */
const fast: McpToolSourceOptions = { backoff: { baseMs: 20, maxMs: 200 }, random: () => 1, clock: systemClock };

function source(raw: Record<string, Record<string, unknown>>, opts: McpToolSourceOptions = {}): McpToolSource {
  const s = new McpToolSource(mcpServers(raw), { ...fast, ...opts });
  sources.push(s);
  return s;
}

const ctx = (): ToolContext => ({ workspaceDir: "/", signal: new AbortController().signal });

async function ready(s: McpToolSource, server: string): Promise<void> {
  await waitFor(`${server} ready`, () => s.status().find((x) => x.server === server)?.state === "ready");
}

async function call(s: McpToolSource, name: string, args: Record<string, unknown> = {}) {
  const tool = s.tools().find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name}; have ${s.tools().map((t) => t.name)}`);
  return tool.execute(args, ctx());
}

describe("server-everything over stdio", () => {
  it("exposes its tools as everything__<tool> with their schemas, and echo, get-sum and get-tiny-image answer", async () => {
    const s = source({ everything: stdioEverything() });
    s.start();
    await ready(s, "everything");
    const names = s.tools().map((t) => t.name);
    console.log(`server-everything tools: ${names.join(", ")}`);
    expect(names).toEqual(
      expect.arrayContaining([
        "everything__echo",
        "everything__get-sum",
        "everything__get-tiny-image",
        "everything__get-env",
      ]),
    );
    const sum = s.tools().find((t) => t.name === "everything__get-sum");
    expect(sum?.parameters).toMatchObject({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
    });
    // readOnlyHint tools may run alongside others
    expect(sum?.concurrency).toBe("parallel");

    const echo = await call(s, "everything__echo", { message: "hello from loopgate" });
    console.log(`echo: ${JSON.stringify(echo.content)}`);
    expect(echo.content).toBe("Echo: hello from loopgate");
    expect(echo.isError).toBeUndefined();

    const added = await call(s, "everything__get-sum", { a: 2, b: 40 });
    console.log(`get-sum: ${JSON.stringify(added.content)}`);
    expect(added.content).toContain("42");

    const image = await call(s, "everything__get-tiny-image");
    const parts = image.content as Array<{ type: string; mimeType?: string; data?: string; text?: string }>;
    console.log(
      `get-tiny-image: ${JSON.stringify(parts.map((p) => (p.type === "image" ? { ...p, data: `${p.data?.length} base64 chars` } : p)))}`,
    );
    const img = parts.find((p) => p.type === "image");
    expect(img?.mimeType).toBe("image/png");
    // the same path as the read tool's images: a line saying what it is, the block with its size
    expect(
      parts.some((p) => p.type === "text" && /everything__get-tiny-image image 1: image\/png 20×20/.test(p.text ?? "")),
    ).toBe(true);
    expect(img).toMatchObject({ width: 20, height: 20 });
  });

  it("get-env shows PATH, HOME, LANG and TERM but no provider key, gateway token or NODE_OPTIONS", async () => {
    const parent = {
      PATH: process.env.PATH,
      HOME: "/home/lg-test",
      LANG: "C.UTF-8",
      TERM: "xterm",
      OPENAI_API_KEY: "sk-test-secret",
      ANTHROPIC_API_KEY: "sk-ant-test-secret",
      LOOPGATE_GATEWAY_TOKEN: "gateway-token-secret",
      LOGNAME: "someone",
      MY_SERVICE_TOKEN: "svc-secret",
    };
    const s = source(
      {
        everything: stdioEverything({
          env: { SERVICE_TOKEN: "${MY_SERVICE_TOKEN}", NODE_OPTIONS: "--require /tmp/x.js", LD_PRELOAD: "/tmp/x.so" },
        }),
      },
      { env: parent },
    );
    s.start();
    await ready(s, "everything");
    const out = await call(s, "everything__get-env");
    const env = JSON.parse(out.content as string) as Record<string, string>;
    console.log(`get-env keys: ${Object.keys(env).sort().join(", ")}`);
    expect(env).toMatchObject({ HOME: "/home/lg-test", LANG: "C.UTF-8", TERM: "xterm", SERVICE_TOKEN: "svc-secret" });
    expect(env.PATH).toBe(parent.PATH);
    expect(out.content).not.toContain("sk-test-secret");
    expect(out.content).not.toContain("sk-ant-test-secret");
    expect(out.content).not.toContain("gateway-token-secret");
    for (const gone of [
      "OPENAI_API_KEY",
      "ANTHROPIC_API_KEY",
      "LOOPGATE_GATEWAY_TOKEN",
      "LOGNAME",
      "NODE_OPTIONS",
      "LD_PRELOAD",
    ]) {
      expect(env[gone], gone).toBeUndefined();
    }
  });

  it("toolFilter include and exclude decide which of the server's tools are offered", async () => {
    const s = source({
      everything: stdioEverything({
        toolFilter: { include: ["get-*", "echo"], exclude: ["get-env", "get-resource-*"] },
      }),
    });
    s.start();
    await ready(s, "everything");
    const names = s
      .tools()
      .map((t) => t.name)
      .sort();
    console.log(`filtered: ${names.join(", ")}`);
    expect(names).toContain("everything__echo");
    expect(names).toContain("everything__get-sum");
    expect(names).not.toContain("everything__get-env");
    expect(names.some((n) => n.startsWith("everything__get-resource-"))).toBe(false);
    expect(names.some((n) => n.startsWith("everything__toggle-"))).toBe(false);
    expect(s.status()[0]?.toolCount).toBe(names.length);
  });

  it("requestTimeoutMs: a call the server does not answer in time is a tool error naming the limit", async () => {
    const s = source({ everything: stdioEverything({ requestTimeoutMs: 300 }) });
    s.start();
    await ready(s, "everything");
    const err = await call(s, "everything__trigger-long-running-operation", { duration: 5, steps: 5 }).catch((e) => e);
    console.log(`slow call: ${(err as Error).message}`);
    expect((err as Error).name).toBe("ToolError");
    expect((err as Error).message).toMatch(
      /everything__trigger-long-running-operation: .*"everything".*300 ms \(requestTimeoutMs\)/,
    );
    // the server is still usable
    expect((await call(s, "everything__echo", { message: "still here" })).content).toBe("Echo: still here");
  });

  it("reconnects after its child is killed, with a new process, and calls work again", async () => {
    const states: string[] = [];
    const s = source({ everything: stdioEverything() });
    s.onChange((e) => {
      if (e.type === "state") states.push(`${e.status.state}${e.status.lastError ? ` (${e.status.lastError})` : ""}`);
    });
    s.start();
    await ready(s, "everything");
    const [first] = s.pids();
    process.kill(first as number, "SIGKILL");
    await waitFor("failed", () => s.status()[0]?.state === "failed");
    // while down its tools stay listed, and calling one says why it cannot run
    const down = await call(s, "everything__echo", { message: "x" }).catch((e: Error) => e);
    await waitFor("ready again", () => s.status()[0]?.state === "ready");
    console.log(`states: ${states.join(" → ")}`);
    console.log(`call while down: ${(down as Error).message}`);
    expect(states[1]).toBe("ready");
    expect(states[2]).toMatch(/^failed \(connection lost; the process killed by SIGKILL/);
    expect(states[3]).toBe("ready");
    const [second] = s.pids();
    expect(second).not.toBe(first);
    expect((await call(s, "everything__echo", { message: "back" })).content).toBe("Echo: back");
  });

  it("command, args and cwd start the server: server-filesystem given a relative dir serves its cwd", async () => {
    const dir = await realpath(await mkdtemp(path.join(tmpdir(), "lg-mcp-fs-")));
    try {
      await writeFile(path.join(dir, "note.txt"), "from the workspace");
      const s = source({ files: { command: process.execPath, args: [FILESYSTEM, "."], cwd: dir } });
      s.start();
      await ready(s, "files");
      const allowed = await call(s, "files__list_allowed_directories");
      console.log(`server-filesystem: ${JSON.stringify(allowed.content)}`);
      expect(allowed.content).toContain(dir);
      const read = await call(s, "files__read_text_file", { path: path.join(dir, "note.txt") });
      expect(read.content).toBe("from the workspace");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("close() leaves no child process alive", async () => {
    const s = source({
      a: stdioEverything(),
      b: stdioEverything(),
      memory: { command: process.execPath, args: [MEMORY] },
    });
    s.start();
    await Promise.all(["a", "b", "memory"].map((n) => ready(s, n)));
    const pids = s.pids();
    console.log(`children before close: ${pids.join(", ")}`);
    expect(pids).toHaveLength(3);
    expect(pids.every(isAlive)).toBe(true);
    await s.close();
    console.log(`alive after close: ${pids.filter(isAlive).join(", ") || "none"}`);
    expect(pids.filter(isAlive)).toEqual([]);
    expect(s.status().map((x) => x.state)).toEqual(["closed", "closed", "closed"]);
  });
});

describe("server-everything over HTTP", () => {
  it("Streamable HTTP: echo and get-sum answer over http://127.0.0.1", async () => {
    const http = await startEverythingHttp("streamableHttp");
    httpServers.push(http);
    const s = source(
      { remote: { url: http.url, headers: { Authorization: "Bearer ${REMOTE_TOKEN}" } } },
      { env: { REMOTE_TOKEN: "tok" } },
    );
    s.start();
    await ready(s, "remote");
    expect(s.status()[0]).toMatchObject({ transport: "streamable-http", state: "ready" });
    expect((await call(s, "remote__echo", { message: "over http" })).content).toBe("Echo: over http");
    expect((await call(s, "remote__get-sum", { a: 1, b: 2 })).content).toContain("3");
  });

  it("headers reach the server with env references resolved, and a refused connection's error does not show them", async () => {
    const seen: string[] = [];
    const refusing = createServer((req, res) => {
      seen.push(String(req.headers.authorization));
      res.writeHead(401, { "content-type": "text/plain" }).end("no");
    });
    await new Promise<void>((r) => refusing.listen(0, "127.0.0.1", r));
    try {
      const { port } = refusing.address() as AddressInfo;
      const s = source(
        { remote: { url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: "Bearer ${REMOTE_TOKEN}" } } },
        { env: { REMOTE_TOKEN: "tok-secret-123" }, backoff: { baseMs: 60000, maxMs: 60000 } },
      );
      s.start();
      await waitFor("failed", () => s.status()[0]?.state === "failed");
      console.log(`refused: ${s.status()[0]?.lastError}`);
      expect(seen[0]).toBe("Bearer tok-secret-123");
      expect(s.status()[0]?.lastError).toContain("HTTP 401");
      expect(JSON.stringify(s.status())).not.toContain("tok-secret-123");
    } finally {
      await new Promise((r) => refusing.close(r));
    }
  });

  it("legacy SSE (transport sse): echo answers", async () => {
    const http = await startEverythingHttp("sse");
    httpServers.push(http);
    const s = source({ legacy: { url: http.url, transport: "sse" } });
    s.start();
    await ready(s, "legacy");
    expect(s.status()[0]).toMatchObject({ transport: "sse", state: "ready" });
    expect((await call(s, "legacy__echo", { message: "over sse" })).content).toBe("Echo: over sse");
  });
});

describe("servers that do not work", () => {
  it("a command that does not exist, one that exits at once and one that never answers: failed, saying why; the rest work", async () => {
    const states: string[] = [];
    const s = source(
      {
        missing: { command: "/nonexistent/mcp-server" },
        exits: { command: process.execPath, args: ["-e", "console.error('boom: no config'); process.exit(3)"] },
        silent: { command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], connectionTimeoutMs: 300 },
        everything: stdioEverything(),
      },
      // retries far away, so each server's first failure is what status shows
      { backoff: { baseMs: 60000, maxMs: 60000 } },
    );
    s.onChange((e) => {
      if (e.type === "state") states.push(`${e.status.server}:${e.status.state}`);
    });
    s.start();
    await ready(s, "everything");
    await waitFor("three failures", () => s.status().filter((x) => x.state === "failed").length === 3);
    const byName = Object.fromEntries(s.status().map((x) => [x.server, x]));
    for (const x of s.status()) console.log(`${x.server}: ${x.state} ${x.lastError ?? ""}`);
    expect(byName.missing?.lastError).toMatch(/ENOENT/);
    expect(byName.exits?.lastError).toMatch(/exited with code 3; stderr: boom: no config/);
    expect(byName.silent?.lastError).toMatch(/no answer within 300 ms \(connectionTimeoutMs\)/);
    // one line per change: connecting, then failed, for each broken server
    expect(states.filter((x) => x.startsWith("exits:"))).toEqual(["exits:connecting", "exits:failed"]);
    expect((await call(s, "everything__echo", { message: "fine" })).content).toBe("Echo: fine");
  });

  it("a server that floods stderr and dies: lastError keeps only the end of it", async () => {
    // exit only once the write is flushed: process.exit() cuts a pending write to a pipe short, which made the
    // server's own last line go missing now and then (not something the client can read)
    const flood =
      "process.stderr.write('x'.repeat(200000) + '\\nfatal: the last line says why\\n', () => process.exit(1))";
    const s = source(
      { noisy: { command: process.execPath, args: ["-e", flood] } },
      { backoff: { baseMs: 60000, maxMs: 60000 } },
    );
    s.start();
    await waitFor("failed", () => s.status()[0]?.state === "failed");
    const lastError = s.status()[0]?.lastError ?? "";
    console.log(`lastError: ${lastError.length} chars, ends "${lastError.slice(-60)}"`);
    expect(lastError).toMatch(/exited with code 1; stderr: x+ \| fatal: the last line says why$/);
    expect(lastError.length).toBeLessThan(5000);
  });

  it("a server that writes more than 10 MB without a line break is dropped as failed, and this process goes on", async () => {
    const spew = "process.stdout.write('x'.repeat(11 * 1024 * 1024)); setInterval(() => {}, 1000)";
    const s = source(
      { spew: { command: process.execPath, args: ["-e", spew] } },
      { backoff: { baseMs: 60000, maxMs: 60000 } },
    );
    s.start();
    await waitFor("failed", () => s.status()[0]?.state === "failed");
    console.log(`spew: ${s.status()[0]?.lastError}`);
    expect(s.status()[0]?.lastError).toMatch(
      /killed by SIGTERM \(ReadBuffer exceeded maximum size of 10485760 bytes\)/,
    );
  });

  it("mcp list of one healthy and one broken server", async () => {
    // a loopback port nothing listens on
    const closed = await freePort();
    const s = source(
      { everything: stdioEverything(), broken: { url: `http://127.0.0.1:${closed}/mcp`, connectionTimeoutMs: 2000 } },
      { backoff: { baseMs: 60000, maxMs: 60000 } },
    );
    s.start();
    await ready(s, "everything");
    await waitFor("broken failed", () => s.status()[1]?.state === "failed");
    const json = JSON.parse(formatMcpListJson(s.status()));
    console.log(formatMcpListText(s.status()));
    console.log(JSON.stringify(json, null, 2));
    expect(json.servers[0]).toMatchObject({
      server: "everything",
      transport: "stdio",
      state: "ready",
      toolCount: 13,
      lastError: null,
    });
    expect(json.servers[1]).toMatchObject({
      server: "broken",
      transport: "streamable-http",
      state: "failed",
      toolCount: 0,
      lastSuccessAt: null,
    });
    expect(json.servers[1].lastError).toMatch(new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${closed}`));
  });

  it("enabled: false is never started and is listed as closed", async () => {
    const s = source({ off: stdioEverything({ enabled: false }), on: stdioEverything() });
    s.start();
    await ready(s, "on");
    expect(s.pids()).toHaveLength(1);
    expect(s.status()).toMatchObject([
      { server: "off", state: "closed", toolCount: 0 },
      { server: "on", state: "ready" },
    ]);
    expect(s.tools().some((t) => t.name.startsWith("off__"))).toBe(false);
  });
});

describe("catalog, allow lists and approvals", () => {
  it("notifications/tools/list_changed refreshes the catalog: a tool the server adds can be called", async () => {
    const s = source({ fixture: { command: process.execPath, args: [FIXTURE_SERVER] } });
    const events: string[] = [];
    s.onChange((e) => events.push(e.type));
    s.start();
    await ready(s, "fixture");
    expect(s.tools().map((t) => t.name)).toEqual(["fixture__add-tool", "fixture__fail"]);
    expect((await call(s, "fixture__add-tool")).content).toBe("registered added-1");
    await waitFor("the new tool", () => s.tools().some((t) => t.name === "fixture__added-1"));
    expect((await call(s, "fixture__added-1")).content).toBe("added-1 ran");
    expect(s.status()[0]?.toolCount).toBe(3);
    expect(events.filter((e) => e === "tools").length).toBeGreaterThanOrEqual(2);
  });

  it("isError results are tool errors the model sees; structuredContent is kept in details", async () => {
    const s = source({
      fixture: { command: process.execPath, args: [FIXTURE_SERVER] },
      everything: stdioEverything({ toolFilter: { include: ["get-structured-content"] } }),
    });
    s.start();
    await Promise.all([ready(s, "fixture"), ready(s, "everything")]);
    const failed = await call(s, "fixture__fail", { why: "disk full" });
    expect(failed).toMatchObject({ isError: true, content: "it broke: disk full" });
    const structured = await call(s, "everything__get-structured-content", { location: "Chicago" });
    console.log(`structured: ${JSON.stringify(structured)}`);
    expect(structured.isError).toBeUndefined();
    expect(structured.details?.structuredContent).toMatchObject({ temperature: expect.any(Number) });
    // a sequential tool: the fixture does not mark its tools read-only
    expect(s.tools().find((t) => t.name === "fixture__fail")?.concurrency).toBe("sequential");
  });

  it("tools(allowList) offers only the named servers' tools; approval marks always / glob-listed tools", async () => {
    const s = source({
      ask: stdioEverything({ approval: "always", toolFilter: { include: ["echo"] } }),
      some: stdioEverything({ approval: { always: ["get-s*"] }, toolFilter: { include: ["echo", "get-sum"] } }),
      never: { command: process.execPath, args: [MEMORY], toolFilter: { include: ["read_graph"] } },
    });
    s.start();
    await Promise.all(["ask", "some", "never"].map((n) => ready(s, n)));
    expect(
      s
        .tools(["some"])
        .map((t) => t.name)
        .sort(),
    ).toEqual(["some__echo", "some__get-sum"]);
    expect(s.tools([]).length).toBe(0);
    expect(
      s
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(["ask__echo", "never__read_graph", "some__echo", "some__get-sum"]);
    expect(s.approvalFor("ask__echo")).toBe(true);
    expect(s.approvalFor("some__get-sum")).toBe(true);
    expect(s.approvalFor("some__echo")).toBe(false);
    expect(s.approvalFor("never__read_graph")).toBe(false);
    expect(s.approvalFor("unknown__tool")).toBe(false);
    // server-memory over stdio answers too
    const graph = await call(s, "never__read_graph");
    console.log(`server-memory read_graph: ${JSON.stringify(graph.content).slice(0, 120)}`);
    expect(graph.isError).toBeUndefined();
    expect(graph.content).toContain("entities");
  });
});
