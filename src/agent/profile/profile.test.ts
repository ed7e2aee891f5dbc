import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import type { LogFields, Logger } from "../../infra/logger.js";
import { sqliteRuntime } from "../../node/compose.js";
import { ScriptedProvider } from "../../providers/scripted.js";
import type { ModelRequest } from "../../providers/types.js";
import { SqliteStoreAdapter } from "../../storage/sqlite-adapter.js";
import { SqliteStore } from "../../storage/sqlite-store.js";
import { McpToolSource } from "../../tools/mcp/source.js";
import { mcpServers, stdioEverything, waitFor } from "../../tools/mcp/test-servers.test-support.js";
import { mcpRuntimeOptions } from "../../tools/mcp/tool-source.js";
import type { ToolSource } from "../../tools/source.js";
import type { Tool } from "../../tools/types.js";
import type { RuntimeOptions } from "../runtime.js";
import { AgentService } from "../service.js";

/*
 * The run profile as runs see it: a real runtime on a real SQLite file, a scripted model whose requests show which
 * tools each run was given, and tool sources (server-everything over stdio, or a source the test changes between
 * runs, as an MCP server's list_changed does).
 */

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const ignore = (_m: string, _f?: LogFields) => {};
  return { warnings, debug: ignore, info: ignore, error: ignore, warn: (m) => warnings.push(m) };
}

function runtime(
  raw: Record<string, unknown>,
  opts: Partial<Omit<RuntimeOptions, "bus" | "sessionLocks" | "isTransientStoreError">> = {},
) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-profile-"));
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  cleanup.push(() => store.close());
  const requests: ModelRequest[] = [];
  const model = new ScriptedProvider("s", (req) => {
    requests.push(req);
    return { text: "ok" };
  });
  const config = parseConfig({ agents: { defaults: { model: { primary: "s/m" } } }, ...raw });
  const logger = recordingLogger();
  const rt = sqliteRuntime({
    config,
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    logger,
    providers: { s: model },
    ...opts,
  });
  const service = new AgentService(rt);
  let n = 0;
  const run = async (message = "hi", agentId?: string) => {
    const accepted = await service.accept({ message, idempotencyKey: `run-${++n}`, ...(agentId ? { agentId } : {}) });
    return service.final(accepted.runId);
  };
  return { rt, run, requests, logger, config };
}

const toolNames = (req: ModelRequest | undefined) => req?.tools?.map((t) => t.name) ?? [];

function plainTool(name: string, source: string): Tool {
  return {
    name,
    description: `${name} for the test`,
    parameters: { type: "object", properties: {} },
    concurrency: "parallel",
    source,
    execute: async () => ({ content: name }),
  };
}

async function readyEverything(): Promise<McpToolSource> {
  const mcp = new McpToolSource(mcpServers({ everything: stdioEverything() }));
  cleanup.push(() => mcp.close());
  mcp.start();
  await waitFor("everything ready", () => mcp.status()[0]?.state === "ready");
  return mcp;
}

describe("the run profile's tools", () => {
  it("a tool source's catalog is read at prepare: a tool it adds between runs is in the next run's request", async () => {
    let offered: Tool[] = [plainTool("srv__one", 'MCP server "srv"')];
    const source: ToolSource = { id: "test", tools: () => offered };
    const { run, requests } = runtime({}, { toolSources: [source] });
    await run();
    offered = [...offered, plainTool("srv__two", 'MCP server "srv"')];
    await run();
    console.log(`run 1 tools: ${toolNames(requests[0])}\nrun 2 tools: ${toolNames(requests[1])}`);
    expect(toolNames(requests[0])).toContain("srv__one");
    expect(toolNames(requests[0])).not.toContain("srv__two");
    expect(toolNames(requests[1])).toEqual(expect.arrayContaining(["srv__one", "srv__two"]));
  });

  it("MCP tools go through the agent's tools.deny and its mcp.servers list like any other tool", async () => {
    const mcp = await readyEverything();
    const config = parseConfig({
      mcp: { servers: { everything: stdioEverything() } },
      agents: {
        defaults: { model: { primary: "s/m" } },
        list: [
          { id: "main", tools: { deny: ["everything__get-*"] } },
          { id: "plain", mcp: { servers: [] } },
        ],
      },
    });
    const { run, requests } = runtime(
      { mcp: { servers: { everything: stdioEverything() } }, agents: config.agents },
      mcpRuntimeOptions(mcp, config),
    );
    await run("hi", "main");
    await run("hi", "plain");
    console.log(`main: ${toolNames(requests[0])}\nplain: ${toolNames(requests[1])}`);
    expect(toolNames(requests[0])).toContain("everything__echo");
    expect(toolNames(requests[0]).filter((n) => n.startsWith("everything__get-"))).toEqual([]);
    expect(toolNames(requests[1]).filter((n) => n.startsWith("everything__"))).toEqual([]);
    expect(toolNames(requests[1])).toContain("read");
  });

  it("a plugin tool named like an MCP tool is refused at registration, naming the plugin and the MCP server", async () => {
    const mcp = await readyEverything();
    const { rt } = runtime({}, mcpRuntimeOptions(mcp, parseConfig({})));
    let error: Error | undefined;
    try {
      rt.registerTool(plainTool("everything__echo", 'plugin "shadow"'));
    } catch (err) {
      error = err as Error;
    }
    console.log(`error: ${error?.message}`);
    expect(error?.message).toBe(
      'tool "everything__echo" from plugin "shadow" clashes with tool "everything__echo" from MCP server "everything"',
    );
  });

  it("an MCP tool that arrives after a plugin took its name is left out of runs, and the clash is logged once naming both", async () => {
    const mcp = await readyEverything();
    const port = mcpRuntimeOptions(mcp, parseConfig({})).toolSources![0]!;
    let connected = false;
    // the server "connects" only after the plugin registered, as a slow server does
    const late: ToolSource = { id: "mcp", tools: (agentId) => (connected ? port.tools(agentId) : []) };
    const { rt, run, requests, logger } = runtime({}, { toolSources: [late] });
    rt.registerTool(plainTool("everything__echo", 'plugin "early"'));
    connected = true;
    await run();
    await run();
    const warnings = logger.warnings.filter((w) => w.includes("clashes"));
    console.log(`warnings: ${warnings.join("\n")}`);
    expect(warnings).toEqual([
      'tool "everything__echo" from MCP server "everything" clashes with tool "everything__echo" from plugin "early"; it is left out',
    ]);
    // the run keeps the plugin's tool, and still gets the server's other tools
    expect(requests[1]?.tools?.find((t) => t.name === "everything__echo")?.description).toBe(
      "everything__echo for the test",
    );
    expect(toolNames(requests[1])).toContain("everything__get-sum");
  });
});
