import type { Tool } from "./types.js";

/**
 * Which tools an agent may use: OpenClaw's `tools.allow` / `tools.deny` (and `agents.list[].tools.allow/deny`).
 * - Entries are tool names, `*` globs ("*" is every tool) or groups; matching ignores case; `bash` means `exec`.
 * - deny wins over allow. A non-empty allow list is a whitelist: only what it matches stays.
 * - An allow list that matches none of the tools is ignored (OpenClaw does the same, so an allow list naming only a
 *   plugin tool that failed to load does not leave the agent without its core tools); `policyWarnings` says so.
 * - The default lists apply first, then the agent's: each layer can only take tools away.
 * Groups: config/constants.ts lists the supported ones (the config refuses the others). Pure: the caller logs the
 * warnings and decides where the lists come from.
 */

export interface ToolPolicy {
  allow?: readonly string[];
  deny?: readonly string[];
}

/** Members by name; group:openclaw and group:plugins go by the tool's source instead. */
const GROUP_MEMBERS: Record<string, readonly string[]> = {
  // OpenClaw's apply_patch and process belong here too; Loopgate has no such tools
  "group:fs": ["read", "write", "edit"],
  "group:runtime": ["exec"],
  "group:messaging": ["message"],
};

const ALIASES: Record<string, string> = { bash: "exec", "apply-patch": "apply_patch" };

export function filterTools(tools: readonly Tool[], policy: ToolPolicy): Tool[] {
  const deny = matchers(policy.deny);
  const allow = matchers(policy.allow);
  const allowed = allow.length > 0 && tools.some((t) => allow.some((m) => m(t))) ? allow : undefined;
  return tools.filter((t) => !deny.some((m) => m(t)) && (!allowed || allowed.some((m) => m(t))));
}

/** Applies the default policy, then the agent's. */
export function filterToolsLayered(tools: readonly Tool[], layers: readonly ToolPolicy[]): Tool[] {
  return layers.reduce<Tool[]>((kept, policy) => filterTools(kept, policy), [...tools]);
}

/** What the operator should hear about a policy over these tools: an allow list that matched nothing and was ignored. */
export function policyWarnings(tools: readonly Tool[], policy: ToolPolicy, where: string): string[] {
  const allow = matchers(policy.allow);
  if (allow.length === 0 || tools.some((t) => allow.some((m) => m(t)))) return [];
  return [
    `${where}.allow (${JSON.stringify(policy.allow)}) matches none of the tools (${tools.map((t) => t.name).join(", ")}); it is ignored`,
  ];
}

type Matcher = (tool: Tool) => boolean;

function matchers(entries: readonly string[] | undefined): Matcher[] {
  return (entries ?? []).map((entry) => matcher(normalize(entry)));
}

function matcher(entry: string): Matcher {
  if (entry === "group:openclaw") return (t) => t.source === "built-in";
  if (entry === "group:plugins") return (t) => t.source?.startsWith("plugin ") === true;
  const members = GROUP_MEMBERS[entry];
  if (members) return (t) => members.includes(normalize(t.name));
  if (!entry.includes("*")) return (t) => normalize(t.name) === entry;
  const pattern = new RegExp(`^${entry.split("*").map(escapeRegExp).join(".*")}$`);
  return (t) => pattern.test(normalize(t.name));
}

function normalize(name: string): string {
  const lower = name.trim().toLowerCase();
  return ALIASES[lower] ?? lower;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
