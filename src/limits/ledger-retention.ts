import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { type PeriodicPrune, startPeriodicPrune } from "../infra/periodic-prune.js";
import type { Store } from "../storage/types.js";
import type { LimitsConfig } from "./budgets.js";

/** Pruned at the gateway's start and then hourly, as the audit ledger is (events/audit-retention.ts). */
export const COST_PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Keeps the cost ledger bounded (`limits.ledger.retentionDays`, `limits.ledger.maxRows`). A budget's month window
 * reads back at most 31 days, so a retention under that would let old spend leave a month early: the schema's
 * default is 90 days.
 */
export function startCostPruning(opts: {
  store: Pick<Store, "pruneCostRows">;
  ledger: LimitsConfig["ledger"];
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
}): PeriodicPrune {
  return startPeriodicPrune({
    what: "the cost ledger",
    prune: () =>
      opts.store.pruneCostRows({
        now: opts.clock.now(),
        maxAgeMs: opts.ledger.retentionDays * DAY_MS,
        maxRows: opts.ledger.maxRows,
      }),
    clock: opts.clock,
    logger: opts.logger,
    intervalMs: opts.intervalMs ?? COST_PRUNE_INTERVAL_MS,
  });
}
