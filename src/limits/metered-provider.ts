import type { ResolvedModel } from "../providers/registry.js";
import { tapStream } from "../providers/stream-tap.js";
import type { ModelProvider, ModelRequest, ModelStreamEvent, Usage } from "../providers/types.js";
import type { MeteredRun, SpendControl } from "./spend-control.js";

/**
 * The provider behind spend control: before each call the run's budgets and caps are checked (a refused call never
 * reaches the provider), and the usage the call reports is recorded, priced with the model that served it. Every
 * model call of a run goes through here, compaction summaries, retries and fallbacks included (agent/run/attempt.ts
 * `providerFor`). Without spend control or a run, the provider is returned as is.
 */
export function meteredProvider(
  spend: SpendControl | undefined,
  run: MeteredRun | undefined,
  model: ResolvedModel,
  provider: ModelProvider,
): ModelProvider {
  if (!spend || !run) return provider;
  return {
    id: provider.id,
    api: provider.api,
    stream: (request) => meteredStream(spend, run, model, provider, request),
  };
}

/** A plain iterator, not an async generator: one promise per event less (providers/stream-tap.ts). */
function meteredStream(
  spend: SpendControl,
  run: MeteredRun,
  model: ResolvedModel,
  provider: ModelProvider,
  request: ModelRequest,
): AsyncIterable<ModelStreamEvent> {
  return tapStream(async () => {
    await spend.beforeCall(run, request.signal);
    if (run.limits) run.limits.meter.calls++;
    let usage: Usage | undefined;
    return {
      stream: provider.stream(request),
      event: (ev) => {
        if (ev.type === "done") usage = ev.usage;
      },
      end: () => {
        // a call that failed before reporting usage is not recorded: its tokens are unknown
        if (!usage) return;
        const authProfile = run.credentials?.usedOn(model.providerId);
        spend.recordCall(
          run,
          {
            provider: model.providerId,
            model: model.modelId,
            cost: model.model.cost,
            ...(authProfile ? { authProfile } : {}),
          },
          usage,
        );
      },
    };
  });
}
