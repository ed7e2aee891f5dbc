import type { ResolvedModel } from "../../providers/registry.js";
import { tapStream } from "../../providers/stream-tap.js";
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

/** A plain iterator, not an async generator: one promise per event less (providers/stream-tap.ts). */
function measuredStream(
  meter: ModelCallMeter,
  model: ResolvedModel,
  provider: ModelProvider,
  request: ModelRequest,
): AsyncIterable<ModelStreamEvent> {
  return tapStream(() => {
    const end = meter.start(model);
    let usage: Usage | undefined;
    let failed: string | undefined;
    return {
      stream: provider.stream(request),
      event: (ev) => {
        if (ev.type === "done") usage = ev.usage;
      },
      error: (err) => {
        // a kind, never the message: messages can quote the request
        failed = err instanceof ProviderError ? err.kind : "error";
        return err;
      },
      end: (how) => {
        // a stream its reader stopped early (an abort between chunks) ended without an error of its own
        const outcome = failed ?? (usage ? "ok" : how === "finished" ? "incomplete" : "aborted");
        end(usage ? { outcome, usage } : { outcome });
      },
    };
  });
}
