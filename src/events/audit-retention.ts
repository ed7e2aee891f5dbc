import type { LoopgateConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { Store } from "../storage/types.js";

/** The ledger is pruned at the gateway's start and then this often (as run records are: gateway/run-pruning.ts). */
export const AUDIT_PRUNE_INTERVAL_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface AuditPruning {
  /** one pass now; returns how many rows went */
  pruneNow(): Promise<number>;
  stop(): void;
}

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
  const { store, limits, clock, logger } = opts;
  const intervalMs = opts.intervalMs ?? AUDIT_PRUNE_INTERVAL_MS;
  let timer: unknown;
  let stopped = false;
  const pruneNow = async (): Promise<number> => {
    try {
      return await store.pruneAuditEvents({
        now: clock.now(),
        maxAgeMs: limits.retentionDays * DAY_MS,
        maxRows: limits.maxRows,
      });
    } catch (err) {
      logger.warn(`gateway: pruning the audit ledger failed: ${(err as Error)?.message ?? String(err)}`);
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
