import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { configSchema, type McpServerConfig } from "../../config/schema.js";

/** Real MCP servers from the npm registry (dev dependencies), run as child processes, for the tests of tools/mcp. */

const root = path.resolve(import.meta.dirname, "../../..");
export const EVERYTHING = path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = path.join(root, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
export const MEMORY = path.join(root, "node_modules/@modelcontextprotocol/server-memory/dist/index.js");
export const FIXTURE_SERVER = path.join(root, "test/fixtures/mcp/fixture-server.mjs");

/** mcp.servers as the config loader makes them, defaults and all. */
export function mcpServers(raw: Record<string, Record<string, unknown>>): Record<string, McpServerConfig> {
  return configSchema.parse({ mcp: { servers: raw } }).mcp.servers;
}

export function stdioEverything(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: [EVERYTHING, "stdio"], ...extra };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface HttpServer {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** server-everything in `streamableHttp` or `sse` mode on a free loopback port; resolves once it listens. */
export async function startEverythingHttp(mode: "streamableHttp" | "sse"): Promise<HttpServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, mode], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port|running on port/i.test(output)) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`server-everything ${mode} exited (${code}): ${output}`)));
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    url: `http://127.0.0.1:${port}/${mode === "sse" ? "sse" : "mcp"}`,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Polls `check` every 20 ms until it holds or `ms` pass (then it fails with `what`). */
export async function waitFor(what: string, check: () => boolean, ms = 10000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
