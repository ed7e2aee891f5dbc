import type { McpStatusResult } from "../../protocol/mcp.js";
import { mcpStatusParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";
import { mcpHealthEntries } from "../mcp-health.js";

/**
 * mcp.status (Loopgate's own method; OpenClaw has none): every configured MCP server's transport, state, tool count,
 * last error and last success, as `loopgate mcp list` prints them. Empty when the gateway runs no MCP server.
 */
export const mcpStatusMethod = defineMethod({
  name: "mcp.status",
  scope: "read",
  params: mcpStatusParamsSchema,
  handle({ gw, reply }) {
    const result: McpStatusResult = { servers: mcpHealthEntries(gw.service.rt.mcpStatus) };
    reply.ok(result);
  },
});
