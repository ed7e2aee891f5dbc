import type { McpServerStatus } from "./connection.js";

/**
 * `loopgate mcp list [--json]`: every configured server with its transport, state, tool count, last error and last
 * success. Pure, so the command and its tests share it. Errors were redacted when recorded (connection.ts).
 */

export function formatMcpListJson(servers: readonly McpServerStatus[]): string {
  return JSON.stringify(
    {
      servers: servers.map((s) => ({
        server: s.server,
        transport: s.transport,
        state: s.state,
        toolCount: s.toolCount,
        lastError: s.lastError ?? null,
        lastSuccessAt: s.lastSuccessAt !== undefined ? new Date(s.lastSuccessAt).toISOString() : null,
      })),
    },
    null,
    2,
  );
}

export function formatMcpListText(servers: readonly McpServerStatus[]): string {
  if (servers.length === 0) return "no MCP servers configured (mcp.servers)";
  const header = ["SERVER", "TRANSPORT", "STATE", "TOOLS", "LAST SUCCESS", "LAST ERROR"];
  const rows = servers.map((s) => [
    s.server,
    s.transport,
    s.state,
    String(s.toolCount),
    s.lastSuccessAt !== undefined ? new Date(s.lastSuccessAt).toISOString() : "never",
    oneLine(s.lastError ?? "-"),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  // the last column is not padded: an error can be long, and trailing spaces help nobody
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] as number))).join("  ");
  return [line(header), ...rows.map(line)].join("\n");
}

function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
