import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentService } from "../../agent/service.js";
import { parseConfig } from "../../config/load.js";
import { silentLogger } from "../../infra/logger.js";
import { sqliteRuntime } from "../../node/compose.js";
import type { AgentEvent, ToolData } from "../../protocol/agent-events.js";
import { ScriptedProvider } from "../../providers/scripted.js";
import type { ModelRequest } from "../../providers/types.js";
import { SqliteStoreAdapter } from "../../storage/sqlite-adapter.js";
import { SqliteStore } from "../../storage/sqlite-store.js";
import { McpToolSource } from "./source.js";
import { mcpServers, stdioEverything, waitFor } from "./test-servers.test-support.js";

/*
 * MCP tools in a real run, before the gateway wires the source in: the runtime is handed the source's tools (as a
 * plugin's would be), a scripted model calls them, a real SQLite file keeps the run. The reply carries what the
 * server answered; the tool events carry the image as metadata, never its base64.
 */

const BASE64_RUN = /[A-Za-z0-9+/]{200,}={0,2}/;
const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe("MCP tools in a run", () => {
  it("a scripted model calls everything__echo and everything__get-tiny-image: the reply carries the echo, events no base64", async () => {
    const mcp = new McpToolSource(mcpServers({ everything: stdioEverything() }));
    cleanup.push(() => mcp.close());
    mcp.start();
    await waitFor("everything ready", () => mcp.status()[0]?.state === "ready");

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-mcp-run-"));
    cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
    cleanup.push(() => store.close());
    const requests: ModelRequest[] = [];
    let turn = 0;
    const model = new ScriptedProvider("s", (req) => {
      requests.push(req);
      turn++;
      // the image first, the echo last, so the reply's {{lastToolResult}} is the echo
      if (turn === 1) return { toolCalls: [{ name: "everything__get-tiny-image", arguments: {} }] };
      if (turn === 2) return { toolCalls: [{ name: "everything__echo", arguments: { message: "hello through MCP" } }] };
      return { text: "The server said: {{lastToolResult}}" };
    });
    const rt = sqliteRuntime({
      config: parseConfig({ agents: { defaults: { model: { primary: "s/m" } } } }),
      stateDir: dir,
      store: new SqliteStoreAdapter(store),
      logger: silentLogger,
      providers: { s: model },
      tools: mcp.tools(),
    });
    const events: AgentEvent[] = [];
    rt.bus.subscribe((ev) => events.push(ev));
    const service = new AgentService(rt);
    const accepted = await service.accept({ message: "use the tools", idempotencyKey: "mcp-1" });
    const final = await service.final(accepted.runId);
    console.log(`final: ${JSON.stringify(final).slice(0, 300)}`);

    expect(requests[0]?.tools?.map((t) => t.name)).toEqual(
      expect.arrayContaining(["everything__echo", "everything__get-tiny-image"]),
    );
    const results = events.flatMap((e) =>
      e.stream === "tool" && e.data.phase === "result" ? [{ data: e.data as ToolData & { phase: "result" } }] : [],
    );
    console.log(`tool results: ${JSON.stringify(results.map((e) => e.data))}`);
    const echo = results.find((e) => e.data.name === "everything__echo");
    expect(echo?.data).toMatchObject({ isError: false, result: "Echo: hello through MCP" });
    const image = results.find((e) => e.data.name === "everything__get-tiny-image");
    expect(image?.data.images).toEqual([
      { type: "image", mimeType: "image/png", bytes: 4033, width: 20, height: 20, omitted: true },
    ]);
    expect(JSON.stringify(events)).not.toMatch(BASE64_RUN);
    expect(final.result?.payloads?.[0]?.text).toBe("The server said: Echo: hello through MCP");
  });
});
