import type { Clock } from "../infra/clock.js";
import { type ModelProvider, type ModelRequest, type ModelStreamEvent, ProviderError } from "../providers/types.js";

export const CLOUD_IDLE_MS = 120_000;
export const SELF_HOSTED_IDLE_MS = 300_000;

/**
 * The model idle window (SPEC 13): cloud 120 s, self-hosted 300 s; `models.providers.<id>.timeoutSeconds` sets it
 * for that provider, but never above a lower finite run timeout. Unlimited runs (0) keep the idle watchdog.
 */
export function resolveIdleTimeoutMs(opts: {
  selfHosted: boolean;
  providerTimeoutMs?: number;
  runTimeoutMs: number;
}): number {
  let idle = opts.providerTimeoutMs ?? (opts.selfHosted ? SELF_HOSTED_IDLE_MS : CLOUD_IDLE_MS);
  if (opts.runTimeoutMs > 0) idle = Math.min(idle, opts.runTimeoutMs);
  return idle;
}

/**
 * Wraps a provider so a request that receives no chunk within `idleMs` is aborted and reported as a timeout,
 * instead of hanging until the run timeout (which may be 48 h away).
 */
export function withIdleWatchdog(provider: ModelProvider, idleMs: number, clock: Clock): ModelProvider {
  if (!(idleMs > 0) || !Number.isFinite(idleMs)) return provider;
  return {
    id: provider.id,
    api: provider.api,
    async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const controller = new AbortController();
      const onOuterAbort = () => controller.abort(request.signal.reason);
      if (request.signal.aborted) controller.abort(request.signal.reason);
      else request.signal.addEventListener("abort", onOuterAbort, { once: true });
      let idleFired = false;
      let timer: unknown;
      // One timer per request, not one per chunk: a chunk only records when it came, and the timer, when it fires,
      // waits again for whatever is left of the window since the last chunk (a streamed token costs no timer work).
      let lastChunkAt = clock.now();
      const check = () => {
        const left = lastChunkAt + idleMs - clock.now();
        if (left > 0) {
          timer = clock.setTimeout(check, left);
          return;
        }
        timer = undefined;
        idleFired = true;
        controller.abort(new ProviderError("timeout", `${provider.id}: no data from the model for ${idleMs} ms`));
      };
      timer = clock.setTimeout(check, idleMs);
      try {
        for await (const ev of provider.stream({ ...request, signal: controller.signal })) {
          lastChunkAt = clock.now();
          yield ev;
        }
      } catch (err) {
        if (idleFired && !request.signal.aborted) {
          throw new ProviderError(
            "timeout",
            `${provider.id}: no data from the model for ${Math.round(idleMs / 1000)} s (idle timeout)`,
          );
        }
        throw err;
      } finally {
        if (timer !== undefined) clock.clearTimeout(timer);
        request.signal.removeEventListener("abort", onOuterAbort);
      }
    },
  };
}
