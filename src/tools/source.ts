import type { Tool } from "./types.js";
import { ToolError } from "./types.js";

/**
 * Where a run's tools come from besides the runtime's own registry (built-ins and plugins): MCP servers today, more
 * later. The run's profile asks every source at prepare time, so a source whose catalog changes (an MCP server's
 * tools/list_changed) reaches the next run without anyone re-registering anything.
 */
export interface ToolSource {
  /** how logs name the source, e.g. "mcp" */
  readonly id: string;
  /** the tools this agent's runs may use from this source now (before the agent's tools.allow/deny) */
  tools(agentId: string): Tool[];
  /** whether a call of `toolName` must wait for an operator's approval before it runs */
  approvalFor?(toolName: string): boolean;
}

/**
 * The source's tools for one agent, each one `approvalFor` names wrapped so its call waits for the run's approval
 * port first: a denial, a timeout or no way to ask is a tool error the model reads.
 */
export function toolsOfSource(source: ToolSource, agentId: string): Tool[] {
  return source.tools(agentId).map((tool) => (source.approvalFor?.(tool.name) ? withApproval(tool) : tool));
}

function withApproval(tool: Tool): Tool {
  return {
    ...tool,
    execute: async (args, ctx) => {
      if (!ctx.approveTool)
        throw new ToolError(`${tool.name} needs an operator's approval, and this run cannot ask one`);
      const verdict = await ctx.approveTool({ tool: tool.name, args, toolCallId: ctx.toolCallId, signal: ctx.signal });
      if (!verdict.allowed) throw new ToolError(`${tool.name} denied: ${verdict.reason}`);
      return tool.execute(args, ctx);
    },
  };
}
