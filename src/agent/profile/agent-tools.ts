import type { LoopgateConfig } from "../../config/schema.js";
import { filterToolsLayered, policyWarnings } from "../../tools/policy.js";
import type { Tool } from "../../tools/types.js";

/** An agent's tools after its allow/deny lists, and the names they withhold. */
export interface AgentTools {
  tools: ReadonlyMap<string, Tool>;
  withheld: ReadonlySet<string>;
}

/**
 * The tools an agent's runs get out of `all` (every source's): tools.allow/deny first, then the agent's own lists
 * (tools/policy.ts), the names withheld from it (a call to one is told it is not available), and what the operator
 * should hear about the lists (an allow list that matched nothing). Pure: the caller logs the warnings.
 */
export function agentTools(
  all: readonly Tool[],
  config: LoopgateConfig,
  agentId: string,
): AgentTools & { warnings: string[] } {
  const { allow, deny } = config.tools;
  const index = config.agents.list.findIndex((a) => a.id === agentId);
  const layers = [{ allow, deny }];
  const agentPolicy = index >= 0 ? config.agents.list[index].tools : undefined;
  if (agentPolicy) layers.push(agentPolicy);
  const kept = filterToolsLayered(all, layers);
  const warnings = policyWarnings(all, { allow, deny }, "tools");
  if (agentPolicy)
    warnings.push(
      ...policyWarnings(filterToolsLayered(all, [{ allow, deny }]), agentPolicy, `agents.list[${index}].tools`),
    );
  const keptNames = new Set(kept.map((t) => t.name));
  return {
    tools: new Map(kept.map((t) => [t.name, t])),
    withheld: new Set(all.filter((t) => !keptNames.has(t.name)).map((t) => t.name)),
    warnings,
  };
}
