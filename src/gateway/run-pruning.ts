import type { LoopgateConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { Store } from "../storage/types.js";

/** Run records accumulate with every message; an hourly pass keeps the table near its configured bounds. */
export const RUN_PRUNE_INTERVAL_MS = 60 * 60 * 1000;

export interface RunPruning {
  /** one pass now; returns how many records went */
  pruneNow(): Promise<number>;
  stop(): void;
}

/**
 * Prunes finished run records (`session.runResults.maxAgeHours`, `maxCount`) once now and then every interval.
 * Queued and running records are never touched: durable intake and restart recovery live on them. A failing pass
 * is logged and the next one runs as planned.
 */
export function startRunPruning(opts: {
  store: Store;
  limits: LoopgateConfig["session"]["runResults"];
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
}): RunPruning {
  const { store, limits, clock, logger } = opts;
  const intervalMs = opts.intervalMs ?? RUN_PRUNE_INTERVAL_MS;
  let timer: unknown;
  let stopped = false;
  const pruneNow = async (): Promise<number> => {
    try {
      const maxAgeMs = limits.maxAgeHours * 60 * 60 * 1000;
      return await store.pruneRuns({ now: clock.now(), maxAgeMs, maxCount: limits.maxCount });
    } catch (err) {
      logger.warn(`gateway: pruning run records failed: ${(err as Error)?.message ?? String(err)}`);
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
