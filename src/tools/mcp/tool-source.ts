import type { LoopgateConfig } from "../../config/schema.js";
import type { ToolSource } from "../source.js";
import { mcpServersForAgent } from "./agent-servers.js";
import type { McpServerStatus } from "./connection.js";
import type { McpToolSource } from "./source.js";

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
  const source: ToolSource = {
    id: "mcp",
    tools: (agentId) => mcp.tools(mcpServersForAgent(config, agentId)),
    approvalFor: (name) => mcp.approvalFor(name),
  };
  return { toolSources: [source], mcpStatus: () => mcp.status() };
}
