import type { Clock } from "./clock.js";
import type { Logger } from "./logger.js";

/** A retention pass that runs now and then on a fixed interval until stopped. */
export interface PeriodicPrune {
  /** one pass now; returns how many rows went (0 when the pass failed: the failure is logged) */
  pruneNow(): Promise<number>;
  stop(): void;
}

/**
 * Runs `prune` once now and then every `intervalMs` on the injected clock (so tests drive it without sleeping). A
 * failing pass is logged as "gateway: pruning <what> failed: …" and the next one runs as planned: retention must never
 * take the gateway down, and a disk that is full now may have room in an hour.
 */
export function startPeriodicPrune(opts: {
  what: string;
  prune: () => Promise<number>;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
}): PeriodicPrune {
  const { what, prune, clock, logger, intervalMs } = opts;
  let timer: unknown;
  let stopped = false;
  const pruneNow = async (): Promise<number> => {
    try {
      return await prune();
    } catch (err) {
      logger.warn(`gateway: pruning ${what} failed: ${(err as Error)?.message ?? String(err)}`);
      return 0;
    }
  };
  const schedule = () => {
    timer = clock.setTimeout(() => {
      if (stopped) return;
      void pruneNow();
      schedule();
    }, intervalMs);
  };
  void pruneNow();
  schedule();
  return {
    pruneNow,
    stop() {
      stopped = true;
      clock.clearTimeout(timer);
    },
  };
}
