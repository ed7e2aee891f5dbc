import type { LoopgateConfig } from "./schema.js";

/*
 * Which agents exist and which one is the default. Zod-free: the CLI checks an --agent id against the cached config
 * before it opens the store, so an unknown id creates nothing.
 */

/** With no `agents.list`, the one agent is "main" (the id every default session key has used). */
const IMPLICIT_AGENT_ID = "main";

type AgentsSection = Pick<LoopgateConfig, "agents">;

export function configuredAgentIds(config: AgentsSection): string[] {
  const ids = config.agents.list.map((a) => a.id);
  return ids.length > 0 ? ids : [IMPLICIT_AGENT_ID];
}

/** The agent marked `default: true`, else the first listed one, else "main". */
export function defaultAgentId(config: AgentsSection): string {
  const list = config.agents.list;
  return (list.find((a) => a.default === true) ?? list[0])?.id ?? IMPLICIT_AGENT_ID;
}

export function isConfiguredAgent(config: AgentsSection, id: string): boolean {
  return configuredAgentIds(config).includes(id);
}

/** "main (default), research (Research assistant)": what an unknown-agent error lists. */
export function describeAgents(config: AgentsSection): string {
  const fallback = defaultAgentId(config);
  const names = new Map(config.agents.list.map((a) => [a.id, a.name]));
  return configuredAgentIds(config)
    .map((id) => {
      const notes = [id === fallback ? "default" : undefined, names.get(id)].filter(Boolean);
      return notes.length ? `${id} (${notes.join(", ")})` : id;
    })
    .join(", ");
}

export function unknownAgentMessage(config: AgentsSection, id: string): string {
  return `unknown agent "${id}"; configured agents: ${describeAgents(config)}`;
}
