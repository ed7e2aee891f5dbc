import type { LoopgateConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { type PeriodicPrune, startPeriodicPrune } from "../infra/periodic-prune.js";
import type { Store } from "../storage/types.js";

/** Run records accumulate with every message; an hourly pass keeps the table near its configured bounds. */
export const RUN_PRUNE_INTERVAL_MS = 60 * 60 * 1000;

export type RunPruning = PeriodicPrune;

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
  const { store, limits } = opts;
  return startPeriodicPrune({
    what: "run records",
    prune: () =>
      store.pruneRuns({
        now: opts.clock.now(),
        maxAgeMs: limits.maxAgeHours * 60 * 60 * 1000,
        maxCount: limits.maxCount,
      }),
    clock: opts.clock,
    logger: opts.logger,
    intervalMs: opts.intervalMs ?? RUN_PRUNE_INTERVAL_MS,
  });
}
