/**
 * Persisted events (SPEC 15 "runs have cursors"): every agent event of every run is stored with its run seq, so a
 * client can re-attach to a run and replay it from a seq (`agent.events`, gateway/methods/agent-events.ts).
 *
 * Off the hot path: the bus listener only appends the event (with its wire JSON) to an in-memory buffer. The buffer
 * is written in one transaction per batch, after a short delay on the injected clock (or on the next turn of the
 * event loop when a batch is full), so a streamed token costs an array push and a run never waits for the disk. The
 * JSON is made once for the writer and the gateway's broadcaster together (events/event-json.ts).
 *
 * Faults never reach the run: a listener that throws would only be logged by the bus, but a failed write is handled
 * here. A storage fault (disk full, I/O error) or a database another process keeps locked past busy_timeout keeps
 * the events buffered and retries with backoff; the buffer is bounded, and what no longer fits is dropped oldest
 * first, counted and logged. Any other write error drops that batch (counted, logged) so one bad batch cannot block
 * the ones behind it.
 *
 * Events not written yet are still readable: `read` returns the stored events followed by the buffered ones, which
 * is what `agent.events` replays.
 */
import type { Clock } from "../infra/clock.js";
import type { AgentEvent } from "../infra/events.js";
import type { Logger } from "../infra/logger.js";
import { isStorageFault, StorageUnavailableError } from "../storage/storage-fault.js";
import type { Store, StoredRunEvent } from "../storage/types.js";
import type { EventBusPort } from "./bus-port.js";
import { agentEventJson } from "./event-json.js";

export interface RunEventWriterOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** how long an event may wait in the buffer before its batch is written (default 50 ms) */
  flushDelayMs?: number;
  /** a batch this big is written on the next turn of the event loop instead of after the delay (default 512) */
  batchSize?: number;
  /** at most this many events wait in memory; beyond it (only while writes fail) the oldest are dropped (default 50,000) */
  maxBuffered?: number;
  /** runs `fn` soon, outside the current call stack (default setImmediate) */
  defer?: (fn: () => void) => void;
}

export interface RunEventWriterStats {
  /** events written to the store */
  stored: number;
  /** events lost: dropped from a full buffer, or in a batch that failed with an error other than a storage fault */
  dropped: number;
  /** events the store already had under their (runId, seq): the first write was kept */
  duplicates: number;
  /** writes that failed */
  failedWrites: number;
  /** events waiting to be written */
  buffered: number;
}

const DEFAULT_FLUSH_DELAY_MS = 50;
const DEFAULT_BATCH_SIZE = 512;
const DEFAULT_MAX_BUFFERED = 50_000;
/** the longest wait between retries while the store cannot be written */
const MAX_RETRY_DELAY_MS = 5000;

export class RunEventWriter {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly flushDelayMs: number;
  private readonly batchSize: number;
  private readonly maxBuffered: number;
  private readonly defer: (fn: () => void) => void;
  private buffer: StoredRunEvent[] = [];
  private timer: unknown;
  private timerArmed = false;
  private soon = false;
  /** set while writes fail: the next retry's delay (doubles up to MAX_RETRY_DELAY_MS) */
  private retryDelayMs = 0;
  private unsubscribe: (() => void) | undefined;
  private closed = false;
  private readonly counts = { stored: 0, dropped: 0, duplicates: 0, failedWrites: 0 };

  constructor(opts: RunEventWriterOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.logger = opts.logger;
    this.flushDelayMs = opts.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS;
    this.batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
    this.maxBuffered = opts.maxBuffered ?? DEFAULT_MAX_BUFFERED;
    this.defer = opts.defer ?? ((fn) => setImmediate(fn));
  }

  /** Starts persisting the bus's events. */
  attach(bus: EventBusPort): void {
    this.unsubscribe?.();
    this.unsubscribe = bus.subscribe((ev) => this.add(ev));
  }

  /** The hot path: one push, and a timer armed once per batch. */
  add(event: AgentEvent): void {
    if (this.closed) return;
    this.buffer.push(toStored(event));
    if (this.buffer.length > this.maxBuffered) this.dropOldest();
    if (!this.timerArmed) this.arm(this.retryDelayMs || this.flushDelayMs);
    if (this.buffer.length >= this.batchSize && !this.soon && this.retryDelayMs === 0) {
      this.soon = true;
      this.defer(() => {
        this.soon = false;
        this.flush();
      });
    }
  }

  /**
   * Writes everything buffered now, one transaction per batch. Returns how many events were written. Never throws:
   * the gateway's close path and the CLI call it before they close the store.
   */
  flush(): number {
    if (this.timerArmed) {
      this.clock.clearTimeout(this.timer);
      this.timerArmed = false;
    }
    let written = 0;
    while (this.buffer.length > 0) {
      const batch = this.buffer.length <= this.batchSize ? this.buffer : this.buffer.slice(0, this.batchSize);
      this.buffer = batch === this.buffer ? [] : this.buffer.slice(batch.length);
      if (!this.write(batch)) break;
      written += batch.length;
    }
    if (this.buffer.length > 0 && !this.closed) this.arm(this.retryDelayMs || this.flushDelayMs);
    return written;
  }

  /**
   * A run's events after `afterSeq`: the stored ones, then those still waiting in the buffer, in seq order, at most
   * `limit`. Synchronous, so no event of the run can be emitted between the two reads.
   */
  read(runId: string, opts: { afterSeq?: number; limit?: number } = {}): StoredRunEvent[] {
    const limit = opts.limit ?? Number.POSITIVE_INFINITY;
    const stored = this.store.readRunEvents(runId, {
      afterSeq: opts.afterSeq,
      ...(Number.isFinite(limit) ? { limit } : {}),
    });
    let last = stored.at(-1)?.seq ?? opts.afterSeq ?? 0;
    for (const ev of this.buffer) {
      if (stored.length >= limit) break;
      if (ev.runId !== runId || ev.seq <= last) continue;
      stored.push(ev);
      last = ev.seq;
    }
    return stored;
  }

  /** The highest seq of the run, stored or buffered; 0 when there is none. */
  lastSeq(runId: string): number {
    for (let i = this.buffer.length - 1; i >= 0; i--) if (this.buffer[i].runId === runId) return this.buffer[i].seq;
    return this.store.lastRunEventSeq(runId);
  }

  get stats(): RunEventWriterStats {
    return { ...this.counts, buffered: this.buffer.length };
  }

  /** Writes what is buffered and stops listening. Call it before the store closes. */
  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.flush();
    this.closed = true;
    if (this.timerArmed) this.clock.clearTimeout(this.timer);
    this.timerArmed = false;
    if (this.buffer.length > 0) this.drop(this.buffer.length, "the store closed while writes were failing");
    this.buffer = [];
  }

  private arm(delayMs: number): void {
    this.timerArmed = true;
    this.timer = this.clock.setTimeout(() => {
      this.timerArmed = false;
      this.flush();
    }, delayMs);
  }

  /** Writes one batch; false when it must be retried later (the batch is back at the head of the buffer). */
  private write(batch: StoredRunEvent[]): boolean {
    try {
      const { ignored } = this.store.appendRunEvents(batch);
      this.counts.stored += batch.length - ignored;
      if (ignored > 0) this.noteDuplicates(ignored);
      if (this.retryDelayMs > 0) {
        this.retryDelayMs = 0;
        this.logger.info("run events: the store takes writes again", { buffered: this.buffer.length });
      }
      return true;
    } catch (err) {
      this.counts.failedWrites++;
      if (retryable(err)) {
        if (this.retryDelayMs === 0) {
          this.logger.warn("run events: cannot write to the store; keeping them in memory and retrying", {
            error: (err as Error).message,
            buffered: this.buffer.length + batch.length,
          });
        }
        this.retryDelayMs = Math.min(MAX_RETRY_DELAY_MS, Math.max(this.flushDelayMs, this.retryDelayMs * 2));
        this.buffer = batch.concat(this.buffer);
        return false;
      }
      this.drop(batch.length, `writing them failed: ${(err as Error)?.message ?? String(err)}`);
      return true;
    }
  }

  private dropOldest(): void {
    const excess = this.buffer.length - this.maxBuffered;
    this.buffer.splice(0, excess);
    // logged once per 1,000 so a long fault does not flood the log
    const before = this.counts.dropped;
    this.counts.dropped += excess;
    if (Math.floor(before / 1000) !== Math.floor(this.counts.dropped / 1000) || before === 0) {
      this.logger.warn("run events: buffer full while the store cannot be written; dropping the oldest", {
        dropped: this.counts.dropped,
        maxBuffered: this.maxBuffered,
      });
    }
  }

  private drop(count: number, why: string): void {
    this.counts.dropped += count;
    this.logger.warn(`run events: ${count} event(s) not stored: ${why}`, { dropped: this.counts.dropped });
  }

  private noteDuplicates(count: number): void {
    const before = this.counts.duplicates;
    this.counts.duplicates += count;
    // a run numbered from 1 again over its stored events is a bug worth one line, not one per event
    if (before === 0) {
      this.logger.warn("run events: seqs already stored were written again; the stored ones were kept", { count });
    }
  }
}

/** Worth retrying: the disk is full or failing, or another process held the database longer than busy_timeout. */
function retryable(err: unknown): boolean {
  if (isStorageFault(err) || err instanceof StorageUnavailableError) return true;
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}

function toStored(ev: AgentEvent): StoredRunEvent {
  return {
    runId: ev.runId,
    seq: ev.seq,
    ts: ev.ts,
    sessionKey: ev.sessionKey,
    stream: ev.stream,
    json: agentEventJson(ev),
  };
}
