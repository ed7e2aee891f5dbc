import type { ModelCallEnd, ModelCallMeter } from "../agent/runtime.js";
import type { ResolvedModel } from "../providers/registry.js";
import { estimateCostUsd } from "../providers/types.js";
import { type LoopgateMetrics, labelCode } from "./catalog.js";

/**
 * The runtime's model-call port for /metrics: counts each call by provider, model and outcome, times it, and adds
 * the tokens it reported and their estimated cost. `now` is a monotonic clock in milliseconds.
 */
export function modelCallMeter(metrics: LoopgateMetrics, now: () => number): ModelCallMeter {
  return {
    start(model: ResolvedModel) {
      const began = now();
      const labels = { provider: model.providerId, model: model.modelId };
      return (end: ModelCallEnd) => {
        metrics.modelCalls.inc({ ...labels, outcome: labelCode(end.outcome) });
        metrics.modelCallDuration.observe(labels, Math.max(0, now() - began) / 1000);
        const u = end.usage;
        if (!u) return;
        addTokens(metrics, labels, "input", u.input);
        addTokens(metrics, labels, "output", u.output);
        addTokens(metrics, labels, "cache_read", u.cacheRead);
        addTokens(metrics, labels, "cache_write", u.cacheWrite);
        const cost = model.model.cost;
        if (cost) {
          const usd = estimateCostUsd(u, cost);
          if (usd > 0) metrics.modelCost.inc(labels, usd);
        }
      };
    },
  };
}

function addTokens(
  metrics: LoopgateMetrics,
  labels: { provider: string; model: string },
  type: string,
  n: number,
): void {
  // a zero is still exported once the series exists; an absent series for a type no provider reports is fine
  if (n > 0) metrics.modelTokens.inc({ ...labels, type }, n);
}
