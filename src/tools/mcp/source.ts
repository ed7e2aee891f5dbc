import { isDeepStrictEqual } from "node:util";
import type { McpServerConfig } from "../../config/schema.js";
import type { Tool, ToolOutput } from "../types.js";
import { ToolError } from "../types.js";
import {
  type McpConnectionOptions,
  McpServerConnection,
  type McpServerStatus,
  McpServerUnavailableError,
} from "./connection.js";
import { globMatcher } from "./glob.js";
import { exposeMcpToolNames } from "./naming.js";
import { toToolOutput } from "./result.js";

/**
 * Every configured MCP server as one tool source. `start()` connects the enabled servers in the background (a slow
 * or broken server delays nothing and throws nothing); `tools()` is the current set as Loopgate tools named
 * `<server>__<tool>`; `status()` is what `loopgate mcp list` and `health` show. A disabled server is listed with
 * state "closed" and never started.
 */

export interface McpToolSourceOptions extends Omit<McpConnectionOptions, "onStateChange" | "onToolsChanged"> {
  /** names other tool sources already use, so an MCP tool never takes one (it gets a suffix instead) */
  reservedNames?: ReadonlySet<string>;
}

export type McpSourceEvent = { type: "state"; status: McpServerStatus } | { type: "tools"; server: string };

interface Exposed {
  name: string;
  server: string;
  tool: string;
}

export class McpToolSource {
  private readonly connections = new Map<string, McpServerConnection>();
  private readonly disabled = new Map<string, McpServerStatus>();
  private readonly approval = new Map<string, (tool: string) => boolean>();
  private readonly listeners = new Set<(event: McpSourceEvent) => void>();
  private exposed: Exposed[] = [];
  private started = false;

  /** each server's entry as configured, to tell which a reloaded config changed */
  private configs: Record<string, McpServerConfig> = {};

  constructor(
    servers: Record<string, McpServerConfig>,
    private readonly opts: McpToolSourceOptions = {},
  ) {
    for (const [name, config] of Object.entries(servers)) this.add(name, config);
  }

  private add(name: string, config: McpServerConfig): void {
    this.configs[name] = config;
    this.approval.set(name, approvalMatcher(config.approval));
    const connection = new McpServerConnection(name, config, {
      ...this.opts,
      onStateChange: (status) => this.emit({ type: "state", status }),
      onToolsChanged: () => {
        this.rename();
        this.emit({ type: "tools", server: name });
      },
    });
    if (config.enabled) this.connections.set(name, connection);
    else this.disabled.set(name, { ...connection.status(), state: "closed", lastError: "disabled (enabled: false)" });
  }

  /** Closes a server's connection and forgets it; resolves once its stdio child has exited. */
  private async drop(name: string): Promise<void> {
    const connection = this.connections.get(name);
    this.connections.delete(name);
    this.disabled.delete(name);
    this.approval.delete(name);
    delete this.configs[name];
    await connection?.close();
  }

  /**
   * A reloaded mcp.servers (SPEC 26): a server whose entry changed is reconnected with it, a new one is connected, a
   * removed one is closed; the others keep their connections. Resolves once the old connections are closed (the new
   * ones connect in the background, as at start). Returns the names it touched.
   */
  async reconfigure(servers: Record<string, McpServerConfig>): Promise<string[]> {
    const touched: string[] = [];
    for (const name of Object.keys(this.configs)) {
      if (servers[name] && isDeepStrictEqual(servers[name], this.configs[name])) continue;
      touched.push(name);
      await this.drop(name);
    }
    for (const [name, config] of Object.entries(servers)) {
      if (this.configs[name]) continue;
      if (!touched.includes(name)) touched.push(name);
      this.add(name, config);
      if (this.started) this.connections.get(name)?.start();
    }
    this.rename();
    return touched;
  }

  /** Connects every enabled server in the background. */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const connection of this.connections.values()) connection.start();
  }

  /**
   * The tools of the servers in `servers` (absent: all), each calling its server. A server that is down keeps the
   * tools it had, and calling one is a tool error saying the server is down and why.
   */
  tools(servers?: readonly string[]): Tool[] {
    const allowed = servers ? new Set(servers) : undefined;
    const out: Tool[] = [];
    for (const entry of this.exposed) {
      if (allowed && !allowed.has(entry.server)) continue;
      const connection = this.connections.get(entry.server);
      const info = connection?.tools().find((t) => t.name === entry.tool);
      if (!connection || !info) continue;
      out.push({
        name: entry.name,
        description: info.description ?? `${entry.tool} (MCP server ${entry.server})`,
        parameters: info.inputSchema,
        concurrency: info.readOnly ? "parallel" : "sequential",
        source: `MCP server "${entry.server}"`,
        execute: (args, ctx) => this.call(connection, entry, args, ctx.signal),
      });
    }
    return out;
  }

  /** Whether a call of the exposed tool `name` must wait for an operator (mcp.servers.<name>.approval). */
  approvalFor(name: string): boolean {
    const entry = this.exposed.find((e) => e.name === name);
    return entry ? (this.approval.get(entry.server)?.(entry.tool) ?? false) : false;
  }

  /** Which server and tool an exposed name stands for. */
  resolve(name: string): { server: string; tool: string } | undefined {
    const entry = this.exposed.find((e) => e.name === name);
    return entry ? { server: entry.server, tool: entry.tool } : undefined;
  }

  /** Every configured server in config order, disabled ones included. */
  status(): McpServerStatus[] {
    const out: McpServerStatus[] = [];
    for (const name of this.order()) {
      out.push(this.connections.get(name)?.status() ?? (this.disabled.get(name) as McpServerStatus));
    }
    return out;
  }

  /** State changes (once per change) and catalog changes; returns the unsubscribe. */
  onChange(listener: (event: McpSourceEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The stdio children running now (tests check they are gone after close). */
  pids(): number[] {
    return [...this.connections.values()].map((c) => c.pid()).filter((p): p is number => p !== undefined);
  }

  /** Closes every connection; resolves once every stdio child has exited. */
  async close(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close()));
    this.listeners.clear();
  }

  private order(): string[] {
    return [...this.approval.keys()];
  }

  /** Names are recomputed over all servers together, so a clash between two servers is resolved the same way. */
  private rename(): void {
    const refs = [...this.connections.values()].flatMap((c) =>
      c.tools().map((t) => ({ server: c.server, tool: t.name })),
    );
    const names = exposeMcpToolNames(refs, this.opts.reservedNames);
    this.exposed = refs.map((ref, i) => ({ ...ref, name: names[i] as string }));
  }

  private async call(
    connection: McpServerConnection,
    entry: Exposed,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ToolOutput> {
    let result: Awaited<ReturnType<McpServerConnection["callTool"]>>;
    try {
      result = await connection.callTool(entry.tool, args, signal);
    } catch (err) {
      if (err instanceof McpServerUnavailableError) throw new ToolError(`${entry.name}: ${err.message}`);
      if (signal.aborted) throw err;
      const message = err instanceof Error ? err.message : String(err);
      throw new ToolError(`${entry.name}: MCP server "${entry.server}" failed the call: ${message}`);
    }
    return toToolOutput(entry.name, result);
  }

  private emit(event: McpSourceEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // a listener's failure is its own
      }
    }
  }
}

function approvalMatcher(approval: McpServerConfig["approval"]): (tool: string) => boolean {
  if (approval === "always") return () => true;
  if (approval === "never") return () => false;
  return globMatcher(approval.always);
}
