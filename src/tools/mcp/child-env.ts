import { resolveSecretRef } from "../../config/secret-ref.js";
import { EXEC_BASE_ENV } from "../exec-env.js";

/**
 * A stdio MCP server's environment. Like exec's child, it never inherits the gateway's own: that holds provider keys
 * and the gateway token, and a third-party server has no business reading them. It gets PATH, HOME, LANG and TERM
 * from the parent and its own `env` from the config ("${ENV}" references resolved). Variables that change how a
 * program loads code (NODE_OPTIONS, LD_*, DYLD_*) are dropped even when the config names them: they would let a
 * config entry inject code into a server that is otherwise a known package.
 */

const LOADER_VARS = /^(NODE_OPTIONS|LD_.*|DYLD_.*)$/;

/** Throws a ConfigError naming `mcp.servers.<server>.env.<NAME>` when a reference is not set. */
export function mcpChildEnv(
  server: string,
  own: Record<string, string>,
  parent: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of EXEC_BASE_ENV) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(own)) {
    if (LOADER_VARS.test(name)) continue;
    env[name] = resolveSecretRef(value, `mcp.servers.${server}.env.${name}`, parent) ?? "";
  }
  return env;
}

/** The server's headers with "${ENV}" references resolved; a ConfigError names the header when one is unset. */
export function mcpHeaders(
  server: string,
  headers: Record<string, string>,
  parent: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name] = resolveSecretRef(value, `mcp.servers.${server}.headers.${name}`, parent) ?? "";
  }
  return out;
}
