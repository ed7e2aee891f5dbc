import type { LoopgateConfig } from "../../config/schema.js";
import { modelChain } from "../run/fallback.js";

/**
 * The models a run may use, in order: the model the turn resolved (request > session override > agent > defaults,
 * after before_model_resolve), then the fallbacks of the agent's `model: { primary, fallbacks }`, else those of
 * `agents.defaults.model`.
 */
export function runModelChain(config: LoopgateConfig, agentId: string, resolvedRef: string): string[] {
  const agentModel = config.agents.list.find((a) => a.id === agentId)?.model;
  const fallbacks =
    typeof agentModel === "object" && agentModel.fallbacks.length > 0
      ? agentModel.fallbacks
      : config.agents.defaults.model.fallbacks;
  return modelChain({ primary: resolvedRef, fallbacks });
}
