import type { Clock } from "../infra/clock.js";
import { tapStream } from "../providers/stream-tap.js";
import { type ModelProvider, type ModelRequest, type ModelStreamEvent, ProviderError } from "../providers/types.js";

export const CLOUD_IDLE_MS = 120_000;
export const SELF_HOSTED_IDLE_MS = 300_000;
/** A cron run with an explicit timeout gives a silent cloud model at most this long, so a fallback still has time. */
export const CRON_CLOUD_IDLE_CAP_MS = 60_000;

/**
 * The model idle window (SPEC 13): cloud 120 s, self-hosted 300 s; `models.providers.<id>.timeoutSeconds` sets it
 * for that provider, but never above a lower finite run timeout. Unlimited runs (0) keep the idle watchdog.
 * Special cases: a cron run with an explicit timeout caps a cloud model's silence at 60 s (self-hosted models keep
 * their 300 s: they are slow to start, not stuck); an endpoint on this machine or a private network (loopback,
 * 10/8, 172.16/12, 192.168/16, fc00::/7, `.local`) whose provider sets `timeoutSeconds: 0` has no idle watchdog at
 * all (0 = off; only the run timeout then stops a silent model).
 */
export function resolveIdleTimeoutMs(opts: {
  selfHosted: boolean;
  /**
   * the endpoint is on this machine or a private network (providers/loopback.ts); only decides whether 0 may turn
   * the watchdog off (the window itself follows `selfHosted`, which `selfHosted: false` in config can deny)
   */
  privateNetwork?: boolean;
  /** the provider's timeoutSeconds in ms; 0 turns the watchdog off for a private-network endpoint */
  providerTimeoutMs?: number;
  runTimeoutMs: number;
  /** a cron run whose job set timeoutSeconds (queue/types.ts `isCronRunWithTimeout`) */
  cronTimeout?: boolean;
}): number {
  if (opts.privateNetwork && opts.providerTimeoutMs === 0) return 0;
  const selfHosted = opts.selfHosted;
  let idle = opts.providerTimeoutMs || (selfHosted ? SELF_HOSTED_IDLE_MS : CLOUD_IDLE_MS);
  if (opts.cronTimeout && !selfHosted) idle = Math.min(idle, CRON_CLOUD_IDLE_CAP_MS);
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
    // a plain iterator, not an async generator: one promise per event less (providers/stream-tap.ts)
    stream: (request: ModelRequest) =>
      tapStream(() => {
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
        const disarm = () => {
          if (timer !== undefined) clock.clearTimeout(timer);
          request.signal.removeEventListener("abort", onOuterAbort);
        };
        let stream: AsyncIterable<ModelStreamEvent>;
        try {
          stream = provider.stream({ ...request, signal: controller.signal });
        } catch (err) {
          disarm();
          throw err;
        }
        return {
          stream,
          event: () => {
            lastChunkAt = clock.now();
          },
          error: (err) =>
            idleFired && !request.signal.aborted
              ? new ProviderError(
                  "timeout",
                  `${provider.id}: no data from the model for ${Math.round(idleMs / 1000)} s (idle timeout)`,
                )
              : err,
          end: disarm,
        };
      }),
  };
}
