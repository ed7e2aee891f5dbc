import type { LoopgateConfig } from "../../config/schema.js";
import type { Logger } from "../../infra/logger.js";
import type { McpSourceEvent, McpToolSource } from "./source.js";

/**
 * Starts the configured MCP servers for a process (the gateway, the embedded CLI), or returns undefined when
 * mcp.servers is empty. The client module (the SDK) is imported only then: it costs ~200 ms, which a process without
 * MCP servers should not pay. The servers connect in the background (the gateway: a slow server never delays
 * `health`); `settle` waits for each to connect or fail first (the embedded CLI's one run, which would otherwise
 * start before any server's tools are listed). Each server's state change is logged once. The caller closes the source; its close() resolves once every stdio child has exited.
 */
export async function startMcp(
  config: LoopgateConfig,
  opts: { logger: Logger; env?: NodeJS.ProcessEnv; settle?: boolean },
): Promise<McpToolSource | undefined> {
  if (Object.keys(config.mcp.servers).length === 0) return undefined;
  const { McpToolSource } = await import("./source.js");
  const mcp = new McpToolSource(config.mcp.servers, { env: opts.env ?? process.env });
  mcp.onChange((event) => logMcpEvent(opts.logger, event));
  mcp.start();
  if (opts.settle) await mcpSettled(mcp, settleTimeoutMs(config));
  return mcp;
}

/** The longest connectionTimeoutMs of the enabled servers: how long settling may take. */
export function settleTimeoutMs(config: LoopgateConfig): number {
  const enabled = Object.values(config.mcp.servers).filter((s) => s.enabled);
  return Math.max(0, ...enabled.map((s) => s.connectionTimeoutMs));
}

function logMcpEvent(logger: Logger, event: McpSourceEvent): void {
  if (event.type !== "state") return;
  const { server, state, toolCount, lastError } = event.status;
  // lastError was redacted when the connection recorded it
  if (state === "failed") logger.warn(`mcp server "${server}" failed`, { error: lastError ?? "unknown" });
  else if (state === "ready") logger.info(`mcp server "${server}" ready`, { tools: toolCount });
  else logger.info(`mcp server "${server}" ${state}`);
}

/**
 * Waits until every enabled server has settled once (ready or failed), or `ms` pass: the CLI's `mcp list --local`
 * shows each server's outcome rather than "connecting". A failed server retrying meanwhile counts as settled.
 */
export async function mcpSettled(mcp: McpToolSource, ms: number): Promise<void> {
  const settled = new Set(
    mcp
      .status()
      .filter((s) => s.state !== "connecting")
      .map((s) => s.server),
  );
  const all = mcp.status().length;
  if (settled.size === all) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    const unsubscribe = mcp.onChange((event) => {
      if (event.type === "state" && event.status.state !== "connecting") settled.add(event.status.server);
      if (settled.size >= all) done();
    });
    function done() {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    }
  });
}
