/**
 * The cost ledger's writer: one row per model call, queued in memory and written to the store in batches (one
 * transaction each) on a timer, like the audit ledger (events/audit-ledger.ts). A model call never waits for it.
 * When the queue is full a row is dropped and counted (the budgets still counted it in memory), with one log line
 * per minute at most. Rows not written yet stay visible to `unwritten()`, so a budget that loads its window's sum
 * from the store adds them and misses nothing.
 */

import type { LedgerRider } from "../events/run-event-writer.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { CostRow, Store } from "../storage/types.js";

export const COST_FLUSH_DELAY_MS = 100;
export const COST_BATCH_ROWS = 500;
const DROP_LOG_INTERVAL_MS = 60_000;

export interface CostLedgerOptions {
  store: Pick<Store, "appendCostRows">;
  clock: Clock;
  logger: Logger;
  /** limits.ledger.queueSize */
  queueSize: number;
}

export class CostLedger {
  private queue: CostRow[] = [];
  /** the batch being written: still unwritten until the store says so */
  private inFlight: CostRow[] = [];
  private timer: unknown;
  private writing: Promise<void> = Promise.resolve();
  /** this ledger's own writes issued and not settled */
  private ownWrites = 0;
  private dropped = 0;
  private lastDropLog: number | undefined;

  constructor(private readonly opts: CostLedgerOptions) {}

  /** Queues a row; never blocks, never throws. */
  add(row: CostRow): void {
    if (this.queue.length >= this.opts.queueSize) {
      this.dropped++;
      const now = this.opts.clock.now();
      if (this.lastDropLog === undefined || now - this.lastDropLog >= DROP_LOG_INTERVAL_MS) {
        this.lastDropLog = now;
        this.opts.logger.warn(
          `cost ledger: dropped a row, the write queue is full (${this.opts.queueSize} rows; limits.ledger.queueSize)`,
          { droppedTotal: this.dropped },
        );
      }
      return;
    }
    this.queue.push(row);
    this.timer ??= this.opts.clock.setTimeout(() => this.writeBatch(), COST_FLUSH_DELAY_MS);
  }

  /**
   * Lets the rows ride the run-event writer's batches (one commit for both; a model call's events are due within the
   * writer's delay of its row). Like the audit ledger's rider: taken only while no write of its own is under way,
   * later writes wait for the ride, and a failed ride's rows are written alone (dropped if refused again).
   */
  rider(): LedgerRider {
    let settled: () => void = () => {};
    return {
      take: () => {
        if (this.inFlight.length > 0 || this.ownWrites > 0 || this.queue.length === 0) return {};
        const rows = this.queue.splice(0, COST_BATCH_ROWS);
        if (this.queue.length === 0 && this.timer !== undefined) {
          this.opts.clock.clearTimeout(this.timer);
          this.timer = undefined;
        }
        // still unwritten for the budgets until the batch commits
        this.inFlight = rows;
        const done = new Promise<void>((resolve) => {
          settled = resolve;
        });
        this.writing = this.writing.then(() => done);
        return { cost: rows };
      },
      settle: (committed) => {
        const rows = this.inFlight;
        this.inFlight = [];
        settled();
        if (committed) return;
        this.queue.unshift(...rows);
        void this.writeOne();
      },
    };
  }

  /** Rows queued or being written: not in the store yet (or not known to be). */
  unwritten(): readonly CostRow[] {
    return this.inFlight.length === 0 ? this.queue : [...this.inFlight, ...this.queue];
  }

  /** Rows lost since start (queue full, or the store refused a batch). */
  droppedRows(): number {
    return this.dropped;
  }

  /** Writes everything queued now. */
  async flush(): Promise<void> {
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) await this.writeOne();
    await this.writing;
  }

  private writeBatch(): void {
    this.timer = undefined;
    void this.writeOne();
    if (this.queue.length > 0) this.timer = this.opts.clock.setTimeout(() => this.writeBatch(), 0);
  }

  private writeOne(): Promise<void> {
    this.ownWrites++;
    this.writing = this.writing.then(async () => {
      const batch = this.queue.splice(0, COST_BATCH_ROWS);
      if (batch.length === 0) {
        this.ownWrites--;
        return;
      }
      this.inFlight = batch;
      try {
        await this.opts.store.appendCostRows(batch);
      } catch (err) {
        this.dropped += batch.length;
        this.opts.logger.warn(`cost ledger: the store refused ${batch.length} row(s): ${(err as Error).message}`);
      } finally {
        this.inFlight = [];
        this.ownWrites--;
      }
    });
    return this.writing;
  }
}
