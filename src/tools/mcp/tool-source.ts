import type { LoopgateConfig } from "../../config/schema.js";
import type { ToolSource } from "../source.js";
import { mcpServersForAgent } from "./agent-servers.js";
import type { McpServerStatus } from "./connection.js";
import type { McpToolSource } from "./source.js";

/**
 * The process's MCP servers as they are now: a config reload may start the first server of a process that had none,
 * or replace servers (node/live-config.ts). Owned and closed by the node.
 */
export interface McpSlot {
  current: McpToolSource | undefined;
}

/**
 * The MCP servers as the runtime sees them (RuntimeOptions): one ToolSource whose tools for an agent are those of
 * its mcp.servers allow list, asked at every run's prepare so a catalog change reaches the next run; and the
 * servers' health for `health` and `mcp.status`. Nothing here when the process runs no MCP server.
 */
export function mcpRuntimeOptions(
  mcp: McpToolSource | undefined,
  config: LoopgateConfig,
): { toolSources?: ToolSource[]; mcpStatus?: () => McpServerStatus[] } {
  if (!mcp) return {};
  return liveMcpRuntimeOptions({ current: mcp }, () => config);
}

/**
 * `mcpRuntimeOptions` over a slot whose source may change, and the config as it is now (a reload may change an
 * agent's mcp.servers list): for the roles whose config is live.
 */
export function liveMcpRuntimeOptions(
  slot: McpSlot,
  config: () => LoopgateConfig,
): { toolSources: ToolSource[]; mcpStatus: () => McpServerStatus[] } {
  const source: ToolSource = {
    id: "mcp",
    tools: (agentId) => slot.current?.tools(mcpServersForAgent(config(), agentId)) ?? [],
    approvalFor: (name) => slot.current?.approvalFor(name) ?? false,
  };
  return { toolSources: [source], mcpStatus: () => slot.current?.status() ?? [] };
}
