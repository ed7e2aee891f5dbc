export { mcpServersForAgent } from "./agent-servers.js";
export { mcpChildEnv } from "./child-env.js";
export {
  DEFAULT_MCP_BACKOFF,
  type McpBackoff,
  type McpServerState,
  type McpServerStatus,
  type McpToolInfo,
} from "./connection.js";
export { formatMcpListJson, formatMcpListText } from "./format.js";
export { exposeMcpToolNames, mcpToolName } from "./naming.js";
export { type McpSourceEvent, McpToolSource, type McpToolSourceOptions } from "./source.js";
export type { McpTransportKind } from "./transport.js";
