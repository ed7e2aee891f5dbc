/**
 * MCP server health on the wire: the `mcp.status` reply (Loopgate's own method), `health.mcp`, and what
 * `loopgate mcp list --json` prints. One entry per configured server, disabled ones included (state "closed").
 */

export interface McpServerHealth {
  server: string;
  transport: "stdio" | "streamable-http" | "sse";
  state: "connecting" | "ready" | "failed" | "closed";
  /** tools offered (after toolFilter); a server that went down keeps the catalog it last had */
  toolCount: number;
  /** redacted when recorded */
  lastError?: string;
  /** epoch ms of the last successful connect or tool listing */
  lastSuccessAt?: number;
}

export interface McpStatusResult {
  servers: McpServerHealth[];
}
