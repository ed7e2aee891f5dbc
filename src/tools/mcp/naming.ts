import { createHash } from "node:crypto";

/**
 * The names the model sees for MCP tools: `<server>__<tool>`, made provider-safe the way OpenClaw does it. Every
 * provider takes `[A-Za-z0-9_-]{1,64}`; MCP tool names may hold dots, slashes, spaces or be longer, so other
 * characters become `-`, a long name is cut and ends in a short hash of the full name (stable across restarts and
 * distinct for names that share a long prefix), and a name already taken gets `-2`, `-3`, ... .
 */

export const TOOL_NAME_MAX = 64;
const HASH_CHARS = 8;

export interface McpToolRef {
  server: string;
  /** the tool's name on its server */
  tool: string;
}

/** `<server>__<tool>` made safe and at most 64 characters; not yet de-duplicated. */
export function mcpToolName(server: string, tool: string): string {
  const full = `${server}__${tool}`;
  const safe = full.replace(/[^A-Za-z0-9_-]/g, "-");
  if (safe.length <= TOOL_NAME_MAX) return safe;
  const hash = createHash("sha256").update(full).digest("hex").slice(0, HASH_CHARS);
  return `${safe.slice(0, TOOL_NAME_MAX - HASH_CHARS - 1)}-${hash}`;
}

/**
 * The exposed name of every tool, in the order given (servers in config order, tools in the server's order), so the
 * first of two clashing tools keeps the plain name. `taken` holds names already used by other tool sources.
 */
export function exposeMcpToolNames(refs: readonly McpToolRef[], taken: ReadonlySet<string> = new Set()): string[] {
  const used = new Set(taken);
  return refs.map(({ server, tool }) => {
    const base = mcpToolName(server, tool);
    let name = base;
    for (let n = 2; used.has(name); n++) {
      const suffix = `-${n}`;
      name = `${base.slice(0, TOOL_NAME_MAX - suffix.length)}${suffix}`;
    }
    used.add(name);
    return name;
  });
}
