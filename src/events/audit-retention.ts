import type { LoopgateConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { type PeriodicPrune, startPeriodicPrune } from "../infra/periodic-prune.js";
import type { Store } from "../storage/types.js";

/** The ledger is pruned at the gateway's start and then this often (as run records are: gateway/run-pruning.ts). */
export const AUDIT_PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export type AuditPruning = PeriodicPrune;

/**
 * Keeps the ledger bounded (`audit.retentionDays`, `audit.maxRows`): one pass now, then one every interval. A failing
 * pass is logged and the next one runs as planned.
 */
export function startAuditPruning(opts: {
  store: Pick<Store, "pruneAuditEvents">;
  limits: Pick<LoopgateConfig["audit"], "retentionDays" | "maxRows">;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
}): AuditPruning {
  const { store, limits } = opts;
  return startPeriodicPrune({
    what: "the audit ledger",
    prune: () =>
      store.pruneAuditEvents({
        now: opts.clock.now(),
        maxAgeMs: limits.retentionDays * DAY_MS,
        maxRows: limits.maxRows,
      }),
    clock: opts.clock,
    logger: opts.logger,
    intervalMs: opts.intervalMs ?? AUDIT_PRUNE_INTERVAL_MS,
  });
}
