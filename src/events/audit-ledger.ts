/**
 * The audit ledger's writer (SPEC 11/20): it listens to the event bus, projects the events it records
 * (audit-projection.ts) into a bounded in-memory queue, and writes that queue to the store in batches, one
 * transaction per batch, on a timer. A run never waits for it: the bus listener only pushes a small row, and when
 * the queue is full the row is dropped and counted instead (the count goes to the log, rate-limited, to `health` and
 * to `audit.list`). Closing writes what is left.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../infra/clock.js";
import type { AgentEvent } from "../infra/events.js";
import type { Logger } from "../infra/logger.js";
import { AUDIT_SCHEMA_VERSION, type AuditLedgerState } from "../protocol/payloads.js";
import type { AuditEventInput, Store } from "../storage/types.js";
import { auditRowOf } from "./audit-projection.js";
import type { EventBusPort } from "./bus-port.js";
import type { LedgerRider } from "./run-event-writer.js";

/** Rows wait this long for more to join their batch (a run's start, its tool calls and its end usually do). */
export const AUDIT_FLUSH_DELAY_MS = 100;
/** Rows per transaction; a longer queue is written over several timer turns, so one flush never holds the loop long. */
export const AUDIT_BATCH_ROWS = 500;
/** At most one "dropped" log line per this window; drops in between are summed into the next line. */
export const AUDIT_DROP_LOG_INTERVAL_MS = 60_000;

export interface AuditLedgerOptions {
  store: Pick<Store, "appendAuditEvents">;
  clock: Clock;
  logger: Logger;
  /** rows that may wait to be written; beyond it new rows are dropped and counted (config audit.queueSize) */
  queueSize: number;
  /** who started the run (AgentService.originOf); undefined is recorded as "unknown" */
  actorOf(runId: string): string | undefined;
  newId?: () => string;
}

export class AuditLedger {
  private readonly opts: AuditLedgerOptions;
  private readonly newId: () => string;
  private queue: AuditEventInput[] = [];
  private timer: unknown;
  private droppedTotal = 0;
  /** drops not reported in a log line yet, and why the last one happened */
  private unreported = 0;
  private unreportedReason = "";
  private lastReportAt: number | undefined;
  private reportTimer: unknown;
  private unsubscribe: (() => void) | undefined;

  constructor(opts: AuditLedgerOptions) {
    this.opts = opts;
    this.newId = opts.newId ?? randomUUID;
  }

  /** Starts recording the bus's events: this node's runs only (each node records the runs it executes, once). */
  attach(bus: EventBusPort): void {
    this.unsubscribe?.();
    this.unsubscribe = bus.subscribeLocal((event) => this.offer(event));
  }

  /** Rows waiting to be written, and rows lost since this ledger started. */
  state(): AuditLedgerState {
    return { backlog: this.queue.length + (this.riding?.length ?? 0), dropped: this.droppedTotal };
  }

  /**
   * Lets the rows ride the run-event writer's batches (one commit for both): the rows come from the same events, so
   * a batch of events is due within the writer's delay of each row, before this ledger's own timer. The timer stays
   * for the rows no batch took. A ride is taken only while no write of the ledger's own is under way, and the
   * ledger's later writes wait for it, so the rows keep the order they were offered in.
   */
  rider(): LedgerRider {
    let settled: () => void = () => {};
    return {
      take: () => {
        if (this.riding || this.ownWrites > 0 || this.queue.length === 0) return {};
        const rows = this.queue.splice(0, AUDIT_BATCH_ROWS);
        if (this.queue.length === 0) this.cancelTimer();
        this.riding = rows;
        const done = new Promise<void>((resolve) => {
          settled = resolve;
        });
        this.writing = this.writing.then(() => done);
        return { audit: rows };
      },
      settle: (committed) => {
        const rows = this.riding ?? [];
        this.riding = undefined;
        settled();
        if (committed) return;
        // the batch failed: the rows are written alone, and dropped (counted) if the store refuses them again
        this.queue.unshift(...rows);
        this.cancelTimer();
        this.writeBatch();
      },
    };
  }

  /** Takes one event: a row for the queue if the ledger records it, or nothing. Never blocks, never throws. */
  offer(event: AgentEvent): void {
    if (event.stream !== "lifecycle" && event.stream !== "tool") return;
    const draft = auditRowOf(event);
    if (!draft) return;
    if (this.queue.length >= this.opts.queueSize) {
      this.drop(1, `the write queue is full (${this.opts.queueSize} rows; audit.queueSize)`);
      return;
    }
    // the draft is this row's own (auditRowOf makes a new one per event): completed in place, not copied
    const row = draft as AuditEventInput;
    row.actor = this.opts.actorOf(event.runId) ?? "unknown";
    row.eventId = this.newId();
    this.queue.push(row);
    this.timer ??= this.opts.clock.setTimeout(() => this.writeBatch(), AUDIT_FLUSH_DELAY_MS);
  }

  /**
   * A row that no run event makes: an `agent` / `chat.send` refused at intake (SPEC 25: rate_limited,
   * budget_exceeded). Nothing of the request is stored, so the row carries its idempotency key as the run id.
   */
  recordRefusal(row: { occurredAt: number; actor: string; sessionKey: string; runId: string; code: string }): void {
    if (this.queue.length >= this.opts.queueSize) {
      this.drop(1, `the write queue is full (${this.opts.queueSize} rows; audit.queueSize)`);
      return;
    }
    this.queue.push({
      ...row,
      action: "intake.refused",
      status: "blocked",
      sourceSequence: 0,
      schemaVersion: AUDIT_SCHEMA_VERSION,
      redaction: "metadata_only",
      eventId: this.newId(),
    });
    this.timer ??= this.opts.clock.setTimeout(() => this.writeBatch(), AUDIT_FLUSH_DELAY_MS);
  }

  /** Writes everything waiting now (audit.list reads its own writes; shutdown loses nothing). */
  async flush(): Promise<void> {
    this.cancelTimer();
    while (this.queue.length > 0) await this.writeOne();
    await this.writing;
  }

  /** Stops listening, writes what is left, and reports drops not logged yet. */
  async close(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.flush();
    if (this.reportTimer !== undefined) this.opts.clock.clearTimeout(this.reportTimer);
    this.reportTimer = undefined;
    this.report();
  }

  private writeBatch(): void {
    this.timer = undefined;
    void this.writeOne();
    if (this.queue.length > 0) this.timer = this.opts.clock.setTimeout(() => this.writeBatch(), 0);
  }

  /**
   * One transaction of at most AUDIT_BATCH_ROWS rows, after the batches taken before it (the ledger's order is the
   * order rows were offered). A batch the store refuses is counted as dropped.
   */
  private writeOne(): Promise<void> {
    const batch = this.queue.splice(0, AUDIT_BATCH_ROWS);
    if (batch.length === 0) return this.writing;
    this.ownWrites++;
    this.writing = this.writing.then(async () => {
      try {
        await this.opts.store.appendAuditEvents(batch);
      } catch (err) {
        this.drop(batch.length, `the store refused the write: ${(err as Error)?.message ?? String(err)}`);
      } finally {
        this.ownWrites--;
      }
    });
    return this.writing;
  }

  /** the last batch write issued; each starts after the one before it settles */
  private writing: Promise<void> = Promise.resolve();
  /** this ledger's own writes issued and not settled */
  private ownWrites = 0;
  /** the rows riding a run-event batch now (LedgerRider) */
  private riding: AuditEventInput[] | undefined;

  private cancelTimer(): void {
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private drop(rows: number, reason: string): void {
    this.droppedTotal += rows;
    this.unreported += rows;
    this.unreportedReason = reason;
    const now = this.opts.clock.now();
    if (this.lastReportAt === undefined || now - this.lastReportAt >= AUDIT_DROP_LOG_INTERVAL_MS) {
      this.report();
      return;
    }
    // within the window: one line at its end sums up what was dropped meanwhile
    this.reportTimer ??= this.opts.clock.setTimeout(
      () => {
        this.reportTimer = undefined;
        this.report();
      },
      this.lastReportAt + AUDIT_DROP_LOG_INTERVAL_MS - now,
    );
  }

  private report(): void {
    if (this.unreported === 0) return;
    this.opts.logger.warn(`audit ledger: dropped ${this.unreported} row(s): ${this.unreportedReason}`, {
      droppedTotal: this.droppedTotal,
      backlog: this.queue.length,
    });
    this.unreported = 0;
    this.lastReportAt = this.opts.clock.now();
  }
}
