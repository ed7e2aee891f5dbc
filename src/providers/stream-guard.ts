/**
 * The abort signal handed to the SDK for one model request. It fires when the caller cancels, and when no data has
 * arrived for `idleMs`: the SDKs' own `timeout` stops counting once the response headers are in, so without this a
 * server that stalls mid-stream would hang the run for good.
 */
export interface StreamGuard {
  readonly signal: AbortSignal;
  /** data arrived: restart the idle window */
  touch(): void;
  /** true once the idle window expired (as opposed to the caller cancelling) */
  readonly timedOut: boolean;
  dispose(): void;
}

export function guardStream(callerSignal: AbortSignal, idleMs: number | undefined): StreamGuard {
  const controller = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const onCallerAbort = () => controller.abort(callerSignal.reason);
  if (callerSignal.aborted) controller.abort(callerSignal.reason);
  else callerSignal.addEventListener("abort", onCallerAbort, { once: true });

  // Re-arming a timer for every chunk is measurable at thousands of chunks per second; note the time instead and let
  // the timer re-arm itself for the remainder when it fires early.
  let lastData = Date.now();
  if (idleMs !== undefined && idleMs > 0 && !controller.signal.aborted) {
    const window = idleMs;
    const check = () => {
      timer = undefined;
      if (controller.signal.aborted) return;
      const idleFor = Date.now() - lastData;
      if (idleFor < window) {
        timer = setTimeout(check, window - idleFor);
        return;
      }
      timedOut = true;
      controller.abort(new Error(`no data from the model within ${window} ms`));
    };
    timer = setTimeout(check, window);
  }

  return {
    signal: controller.signal,
    touch() {
      lastData = Date.now();
    },
    get timedOut() {
      return timedOut;
    },
    dispose() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      callerSignal.removeEventListener("abort", onCallerAbort);
    },
  };
}
