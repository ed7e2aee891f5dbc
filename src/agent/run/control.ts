import type { Clock } from "../../infra/clock.js";
import { RunTimeoutError } from "./errors.js";

/** The run's own abort signal: the caller's abort, or the run timeout (0 = none), whichever comes first. */
export interface RunControl {
  readonly signal: AbortSignal;
  dispose(): void;
}

export function runControl(outer: AbortSignal | undefined, timeoutMs: number, clock: Clock): RunControl {
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(outer?.reason ?? new Error("aborted"));
  if (outer?.aborted) onOuterAbort();
  else outer?.addEventListener("abort", onOuterAbort, { once: true });
  const timer =
    timeoutMs > 0 ? clock.setTimeout(() => controller.abort(new RunTimeoutError(timeoutMs)), timeoutMs) : undefined;
  return {
    signal: controller.signal,
    dispose() {
      if (timer !== undefined) clock.clearTimeout(timer);
      outer?.removeEventListener("abort", onOuterAbort);
    },
  };
}
