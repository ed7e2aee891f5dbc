import type { ModelCost, Usage } from "../providers/types.js";
import { estimateCostUsd } from "../providers/types.js";

/** One model call's usage priced with the model that served it; `usd` absent when that model has no price. */
export interface PricedCall {
  tokens: number;
  usd?: number;
}

/**
 * Prices `usage` at `cost` (USD per million tokens, `models.providers.<p>.models[].cost`). A model without a price
 * counts tokens only: its calls still count against token limits, and reports say how many calls were unpriced.
 */
export function priceCall(usage: Usage, cost: ModelCost | undefined): PricedCall {
  const tokens = usage.total || usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
  return cost ? { tokens, usd: estimateCostUsd(usage, cost) } : { tokens };
}
