import { SSEClientTransport, StreamableHTTPClientTransport, type Transport } from "@modelcontextprotocol/client";
import type { McpServerConfig } from "../../config/schema.js";
import { mcpChildEnv, mcpHeaders } from "./child-env.js";
import { McpStdioTransport } from "./stdio-transport.js";

export type McpTransportKind = "stdio" | "streamable-http" | "sse";

/** What the config says the server speaks: `command` is stdio; `url` is Streamable HTTP unless `transport: "sse"`. */
export function transportKind(config: McpServerConfig): McpTransportKind {
  if (config.command !== undefined) return "stdio";
  return config.transport === "sse" ? "sse" : "streamable-http";
}

/** A fresh transport for one connection attempt; throws a ConfigError when an "${ENV}" reference is unset. */
export function createTransport(server: string, config: McpServerConfig, env: NodeJS.ProcessEnv): Transport {
  const kind = transportKind(config);
  if (kind === "stdio") {
    return new McpStdioTransport({
      command: config.command as string,
      args: config.args,
      env: mcpChildEnv(server, config.env, env),
      cwd: config.cwd,
    });
  }
  const url = new URL(config.url as string);
  const headers = mcpHeaders(server, config.headers, env);
  if (kind === "streamable-http") return new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  return new SSEClientTransport(url, {
    requestInit: { headers },
    // the request that opens the event stream takes its headers from here, not from requestInit
    eventSourceInit: {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...toRecord(init?.headers), ...headers } }),
    },
  });
}

function toRecord(headers: HeadersInit | undefined): Record<string, string> {
  return headers ? Object.fromEntries(new Headers(headers).entries()) : {};
}
