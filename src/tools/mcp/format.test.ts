import { describe, expect, it } from "vitest";
import type { McpServerStatus } from "./connection.js";
import { formatMcpListJson, formatMcpListText } from "./format.js";

const servers: McpServerStatus[] = [
  {
    server: "everything",
    transport: "stdio",
    state: "ready",
    toolCount: 13,
    lastSuccessAt: Date.UTC(2026, 11, 2, 5, 0, 0),
  },
  {
    server: "broken",
    transport: "streamable-http",
    state: "failed",
    toolCount: 0,
    lastError: "fetch failed\n  (connect ECONNREFUSED 127.0.0.1:9)",
  },
];

describe("loopgate mcp list output", () => {
  it("text: one row per server with transport, state, tool count, last success and last error on one line", () => {
    const text = formatMcpListText(servers);
    console.log(text);
    const lines = text.split("\n");
    expect(lines[0]).toMatch(/^SERVER\s+TRANSPORT\s+STATE\s+TOOLS\s+LAST SUCCESS\s+LAST ERROR$/);
    expect(lines[1]).toMatch(/^everything\s+stdio\s+ready\s+13\s+2026-12-02T05:00:00.000Z\s+-$/);
    expect(lines[2]).toMatch(
      /^broken\s+streamable-http\s+failed\s+0\s+never\s+fetch failed \(connect ECONNREFUSED 127.0.0.1:9\)$/,
    );
    expect(formatMcpListText([])).toBe("no MCP servers configured (mcp.servers)");
  });

  it("--json: every field, nulls where there is nothing yet", () => {
    const json = JSON.parse(formatMcpListJson(servers));
    expect(json).toEqual({
      servers: [
        {
          server: "everything",
          transport: "stdio",
          state: "ready",
          toolCount: 13,
          lastError: null,
          lastSuccessAt: "2026-12-02T05:00:00.000Z",
        },
        {
          server: "broken",
          transport: "streamable-http",
          state: "failed",
          toolCount: 0,
          lastError: servers[1]?.lastError,
          lastSuccessAt: null,
        },
      ],
    });
  });
});
