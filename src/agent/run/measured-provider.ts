import type { ResolvedModel } from "../../providers/registry.js";
import {
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  ProviderError,
  type Usage,
} from "../../providers/types.js";
import type { ModelCallMeter } from "../runtime.js";

/**
 * The provider as is, or (when something measures model calls: /metrics) telling the meter how each call ended and
 * what it used. Unset, nothing is wrapped, so a gateway without metrics streams exactly as before.
 */
export function measuredProvider(
  meter: ModelCallMeter | undefined,
  model: ResolvedModel,
  provider: ModelProvider,
): ModelProvider {
  if (!meter) return provider;
  return {
    id: provider.id,
    api: provider.api,
    stream: (request) => measuredStream(meter, model, provider, request),
  };
}

async function* measuredStream(
  meter: ModelCallMeter,
  model: ResolvedModel,
  provider: ModelProvider,
  request: ModelRequest,
): AsyncGenerator<ModelStreamEvent> {
  const end = meter.start(model);
  let usage: Usage | undefined;
  let failed: string | undefined;
  let finished = false;
  try {
    for await (const ev of provider.stream(request)) {
      if (ev.type === "done") usage = ev.usage;
      yield ev;
    }
    finished = true;
  } catch (err) {
    // a kind, never the message: messages can quote the request
    failed = err instanceof ProviderError ? err.kind : "error";
    throw err;
  } finally {
    // a stream its reader stopped early (an abort between chunks) ended without an error of its own
    const outcome = failed ?? (usage ? "ok" : finished ? "incomplete" : "aborted");
    end(usage ? { outcome, usage } : { outcome });
  }
}
