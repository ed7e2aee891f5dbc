import type { McpServerHealth } from "../protocol/mcp.js";
import type { HealthResult } from "../protocol/payloads.js";

/**
 * `health` with the MCP servers' states (when the gateway runs any): an enabled server that failed makes the
 * gateway degraded, naming it, so no tool goes silently missing. A degraded store is named first: it is the worse
 * fault. Runs that do not use the failed server are not affected by it.
 */
export function withMcpHealth(health: HealthResult, mcpStatus: (() => McpServerHealth[]) | undefined): HealthResult {
  const mcp = mcpHealthEntries(mcpStatus);
  // no server configured (a process whose reloads may add one lists none)
  if (mcp.length === 0) return health;
  const failed = mcp.filter((s) => s.state === "failed").map((s) => s.server);
  if (failed.length === 0 || health.degraded) return { ...health, mcp };
  return { ...health, ok: false, degraded: { reason: "mcp server failed", servers: failed }, mcp };
}

/** The servers' states as the wire carries them (only the wire's fields, whatever else the source keeps). */
export function mcpHealthEntries(mcpStatus: (() => McpServerHealth[]) | undefined): McpServerHealth[] {
  if (!mcpStatus) return [];
  return mcpStatus().map(({ server, transport, state, toolCount, lastError, lastSuccessAt }) => ({
    server,
    transport,
    state,
    toolCount,
    ...(lastError !== undefined ? { lastError } : {}),
    ...(lastSuccessAt !== undefined ? { lastSuccessAt } : {}),
  }));
}
