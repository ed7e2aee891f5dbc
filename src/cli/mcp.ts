import { loadConfigCached } from "../config/cached.js";
import type { McpStatusResult } from "../protocol/mcp.js";
import { formatMcpListJson, formatMcpListText } from "../tools/mcp/format.js";
import { connectGateway, resolveGatewayTarget } from "./agent-remote.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface McpListCliOptions {
  url?: string;
  token?: string;
  config?: string;
  json?: boolean;
  /** start the configured servers here instead of asking the gateway */
  local?: boolean;
}

/**
 * `loopgate mcp list [--json] [--local]`: every configured MCP server with its transport, state, tool count, last
 * error and last success. By default the running gateway answers (`mcp.status`): its servers are the ones runs use.
 * `--local` starts the servers from the config in this process, waits for each to connect or fail (at most its
 * connectionTimeoutMs), prints, and closes every child before returning.
 */
export async function runMcpList(opts: McpListCliOptions): Promise<number> {
  const servers = opts.local ? await localStatus(opts.config) : await gatewayStatus(opts);
  process.stdout.write(`${opts.json ? formatMcpListJson(servers) : formatMcpListText(servers)}\n`);
  return EXIT.ok;
}

async function gatewayStatus(opts: McpListCliOptions): Promise<McpStatusResult["servers"]> {
  const { url, token } = resolveGatewayTarget(opts);
  const client = await connectGateway(url, token, ["operator.read"], "or start the servers here with --local");
  try {
    return (await client.request<McpStatusResult>("mcp.status", {})).servers;
  } catch (err) {
    throw new CliError(`the gateway at ${url} did not answer mcp.status: ${(err as Error).message}`, EXIT.runError);
  } finally {
    await client.close();
  }
}

async function localStatus(configPath: string | undefined): Promise<McpStatusResult["servers"]> {
  const { config } = await loadConfigCached({ configPath });
  const { startMcp } = await import("../tools/mcp/start.js");
  const { createLogger } = await import("../infra/logger.js");
  const mcp = await startMcp(config, { logger: createLogger(), settle: true });
  if (!mcp) return [];
  try {
    return mcp.status();
  } finally {
    await mcp.close();
  }
}
