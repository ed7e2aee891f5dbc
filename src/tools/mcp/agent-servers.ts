import type { LoopgateConfig } from "../../config/schema.js";

/**
 * The MCP servers an agent's runs may use: `agents.list[].mcp.servers`, else `agents.defaults.mcp.servers`, else
 * undefined (every server). Names were checked against mcp.servers at load (config/check.ts).
 */
export function mcpServersForAgent(config: LoopgateConfig, agentId: string): string[] | undefined {
  const agent = config.agents.list.find((a) => a.id === agentId);
  return agent?.mcp?.servers ?? config.agents.defaults.mcp.servers;
}
