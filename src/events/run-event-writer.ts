/**
 * Persisted events (SPEC 15 "runs have cursors"): every agent event of every run is stored with its run seq, so a
 * client can re-attach to a run and replay it from a seq (`agent.events`, gateway/methods/agent-events.ts).
 *
 * Off the hot path: the bus listener only appends the event (with its wire JSON) to an in-memory buffer. The buffer
 * is written in one transaction per batch, after a short delay on the injected clock (or on the next turn of the
 * event loop when a batch is full), so a streamed token costs an array push and a run never waits for the disk. The
 * JSON is made once for the writer and the gateway's broadcaster together (events/event-json.ts).
 *
 * A transaction is synchronous work on the event loop (SQLite), so a backlog is written one batch per turn of the
 * loop, with the sockets served in between: written back to back, the batches that piled up while the machine was
 * busy stalled every stream at once (at a thousand streams, hundreds of ms). The buffer is a queue read from `head`,
 * so taking a batch or dropping the oldest costs no copy of what stays.
 *
 * Faults never reach the run: a listener that throws would only be logged by the bus, but a failed write is handled
 * here. A storage fault (disk full, I/O error) or a database another process keeps locked past busy_timeout keeps
 * the events buffered and retries with backoff; the buffer is bounded, and what no longer fits is dropped oldest
 * first, counted and logged. Any other write error drops that batch (counted, logged) so one bad batch cannot block
 * the ones behind it.
 *
 * Events not written yet are still readable: `read` returns the stored events followed by the buffered ones, which
 * is what `agent.events` replays.
 *
 * A run's end does not hurry the batch: on Postgres the end notice rides a batch (`announceEnd`: the first batch
 * that holds or follows every event emitted before it was asked), not a `flush()` nor a commit of its own, so a batch
 * spans the turns that end within its delay. A flush per end cost every turn at least one run-event commit of its
 * own, however short the turn; a NOTIFY of its own after `written()`, one more.
 */
import type { Clock } from "../infra/clock.js";
import type { AgentEvent } from "../infra/events.js";
import type { Logger } from "../infra/logger.js";
import { isStorageFault, StorageUnavailableError } from "../storage/storage-fault.js";
import type { LedgerBatch, RunEndNotice, Store, StoredRunEvent } from "../storage/types.js";
import type { EventBusPort } from "./bus-port.js";
import { agentEventJson } from "./event-json.js";

export interface RunEventWriterOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /**
   * The node's rule for a store error worth retrying (node/compose.ts: a Postgres server restarting or out of reach;
   * never on SQLite). A full or failing disk and SQLite's busy are retried whatever the rule.
   */
  isTransientStoreError: (err: unknown) => boolean;
  /** how long an event may wait in the buffer before its batch is written (default: `writePace(store)`) */
  flushDelayMs?: number;
  /** a batch this big is written on the next turn of the event loop instead of after the delay (default: `writePace`) */
  batchSize?: number;
  /** at most this many events wait in memory; beyond it (only while writes fail) the oldest are dropped (default 50,000) */
  maxBuffered?: number;
  /** runs `fn` soon, outside the current call stack (default setImmediate) */
  defer?: (fn: () => void) => void;
}

/**
 * Another ledger whose rows ride a run-event batch's transaction (the audit and cost ledgers): they cost no commit
 * of their own while runs stream events. A rider keeps its own semantics: rows of a batch that failed go back to it
 * and it writes them alone (dropping them if that fails too), while the events are retried as usual.
 */
export interface LedgerRider {
  /** the rows waiting now (none while the rider's own write is under way, so its order holds) */
  take(): Partial<Pick<LedgerBatch, "audit" | "cost">>;
  /** the batch that carried them committed (true), or failed (false: the rider writes them itself) */
  settle(committed: boolean): void;
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

/**
 * How often the buffer is written, by store. On Postgres the store is how the other nodes hear a run (events/pg-bus.ts:
 * each batch's COMMIT announces it), so the delay is a cross-node stream's lag: 50 ms. On SQLite (one node) nobody
 * reads the store live (`read` merges the buffer), and what a batch costs is mostly the index pages it rewrites: the
 * unique (run_id, seq) index puts each run's new entries on that run's own leaf page, and a commit writes every page
 * it touched to the WAL however few entries it added. With 100 runs streaming, a 50 ms batch added ~2 events per run
 * per page written; 200 ms adds ~8. Measured on the bench machine, SQLite CPU per stored event (bench/README.md,
 * "Streaming: the run-event store"): 100 runs, 2 events each per commit 14.7 µs, 8 each 9.1 µs; 1,000 runs, 1 each
 * (512-event batches) 26.9 µs, 2 each (2,048) 14.4 µs. The price is a crash losing up to 200 ms of a run's events
 * instead of 50 (a restart's recovery numbers on from the last stored seq either way).
 */
export function writePace(store: Pick<Store, "kind">): { flushDelayMs: number; batchSize: number } {
  return store.kind === "sqlite" ? { flushDelayMs: 200, batchSize: 2048 } : { flushDelayMs: 50, batchSize: 512 };
}
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
  private readonly isTransientStoreError: (err: unknown) => boolean;
  /** events not written yet are `buffer[head..]` (taken from the front without copying the rest) */
  private buffer: StoredRunEvent[] = [];
  private head = 0;
  /** the batch being written right now (still readable until its write settles) */
  private inFlight: StoredRunEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private timer: unknown;
  private timerArmed = false;
  private soon = false;
  /** set while writes fail: the next retry's delay (doubles up to MAX_RETRY_DELAY_MS) */
  private retryDelayMs = 0;
  private unsubscribe: (() => void) | undefined;
  private closed = false;
  private closing = false;
  private readonly counts = { stored: 0, dropped: 0, duplicates: 0, failedWrites: 0 };
  /**
   * Events taken in, and events that left (written, found stored already, or dropped), since the start: the buffer
   * is a FIFO, so `written()` waits for `left` to reach the count of events taken in when it was asked.
   */
  private taken = 0;
  private left = 0;
  private waiters: Array<{ until: number; resolve: () => void }> = [];
  /** end notices waiting for a batch: each may go once `left` reaches `until` in the batch that carries it */
  private ends: Array<{ end: RunEndNotice; until: number; resolve: () => void; reject: (err: Error) => void }> = [];
  private readonly riders: LedgerRider[] = [];

  constructor(opts: RunEventWriterOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.logger = opts.logger;
    const pace = writePace(opts.store);
    this.flushDelayMs = opts.flushDelayMs ?? pace.flushDelayMs;
    this.batchSize = opts.batchSize ?? pace.batchSize;
    this.maxBuffered = opts.maxBuffered ?? DEFAULT_MAX_BUFFERED;
    this.defer = opts.defer ?? ((fn) => setImmediate(fn));
    this.isTransientStoreError = opts.isTransientStoreError;
  }

  /** Starts persisting the bus's events: this node's runs only (another node's run is stored by that node). */
  attach(bus: EventBusPort): void {
    this.unsubscribe?.();
    this.unsubscribe = bus.subscribeLocal((ev) => this.add(ev));
  }

  /** Lets `rider`'s rows ride every batch written from now on (Store.appendLedgerBatch). */
  carry(rider: LedgerRider): void {
    this.riders.push(rider);
  }

  /** The hot path: one push, and a timer armed once per batch. */
  add(event: AgentEvent): void {
    if (this.closed) return;
    this.buffer.push(toStored(event));
    this.taken++;
    if (this.buffer.length - this.head > this.maxBuffered) this.dropOldest();
    if (!this.timerArmed) this.arm(this.retryDelayMs || this.flushDelayMs);
    if (this.buffer.length - this.head >= this.batchSize && !this.soon && this.retryDelayMs === 0) {
      this.soon = true;
      this.defer(() => {
        this.soon = false;
        void this.flush();
      });
    }
  }

  /**
   * Writes everything buffered now, one transaction per batch. Resolves with how many events were written. Never
   * rejects: the gateway's close path and the CLI await it before they close the store. One flush at a time: a
   * flush asked for while one runs waits for it, then writes what is left.
   */
  flush(): Promise<number> {
    const next = this.flushing.then(() => this.flushNow());
    this.flushing = next.then(
      () => {},
      () => {},
    );
    return next;
  }

  /**
   * Resolves once every event taken in so far has left the buffer (written, or dropped), at the batch's own pace:
   * nothing is written earlier for it. While writes fail it waits for the retries. Never rejects.
   */
  written(): Promise<void> {
    if (this.left >= this.taken || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ until: this.taken, resolve }));
  }

  /**
   * Announces a run's end at the commit of a batch that holds or follows every event taken in so far (Store
   * appendLedgerBatch's `runEnds`): no commit of its own while runs stream. With nothing left to write it goes in a
   * batch of its own after the usual delay. Resolves at that commit; a batch that fails keeps it for the next one (as
   * its events are kept), so it never goes out before the events it follows. Rejects once the writer is closed with it
   * unsent: the caller announces it by other means.
   */
  announceEnd(end: RunEndNotice): Promise<void> {
    if (this.closed) return Promise.reject(new Error("run events: the writer is closed"));
    return new Promise<void>((resolve, reject) => {
      this.ends.push({ end, until: this.taken, resolve, reject });
      if (!this.timerArmed) this.arm(this.retryDelayMs || this.flushDelayMs);
    });
  }

  /** `count` more events left the buffer: wakes the `written()` callers they were waited for by. */
  private settled(count: number): void {
    this.left += count;
    if (this.waiters.length === 0) return;
    const due = this.waiters.filter((w) => w.until <= this.left);
    if (due.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.until > this.left);
    for (const w of due) w.resolve();
  }

  private async flushNow(): Promise<number> {
    if (this.timerArmed) {
      this.clock.clearTimeout(this.timer);
      this.timerArmed = false;
    }
    let written = 0;
    // an end notice with no event left to wait for still needs a batch (one with no events)
    while (this.buffer.length > this.head || this.ends.length > 0) {
      // the event loop gets a turn before each further batch: the sockets are served between two transactions
      if (written > 0 && !this.closing) await new Promise<void>((resolve) => this.defer(resolve));
      const batch = this.takeBatch();
      this.inFlight = batch;
      const ok = await this.write(batch);
      this.inFlight = [];
      if (!ok) break;
      written += batch.length;
      // an end asked for while this batch was written waits for the timer it armed (a batch of its own now would be
      // a commit per end again)
      if (this.buffer.length === this.head) break;
    }
    if ((this.buffer.length > this.head || this.ends.length > 0) && !this.closed && !this.timerArmed)
      this.arm(this.retryDelayMs || this.flushDelayMs);
    return written;
  }

  /** The oldest `batchSize` events, off the front of the queue. */
  private takeBatch(): StoredRunEvent[] {
    const end = Math.min(this.buffer.length, this.head + this.batchSize);
    if (this.head === 0 && end === this.buffer.length) {
      const all = this.buffer;
      this.buffer = [];
      return all;
    }
    const batch = this.buffer.slice(this.head, end);
    this.head = end;
    this.compact();
    return batch;
  }

  /** Lets go of the taken front once it is most of the array (amortized: each event is copied at most once). */
  private compact(): void {
    if (this.head === this.buffer.length) {
      this.buffer = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.buffer.length) {
      this.buffer = this.buffer.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * A run's events after `afterSeq`: the stored ones, then those not written yet, in seq order, at most `limit`.
   * The unwritten ones (buffered, or in the batch being written) are taken before the store is read, and merged by
   * seq, so an event written meanwhile is neither lost nor doubled.
   */
  async read(runId: string, opts: { afterSeq?: number; limit?: number } = {}): Promise<StoredRunEvent[]> {
    const limit = opts.limit ?? Number.POSITIVE_INFINITY;
    const after = opts.afterSeq ?? 0;
    const unwritten = [...this.inFlight, ...this.buffer.slice(this.head)].filter(
      (ev) => ev.runId === runId && ev.seq > after,
    );
    const stored = await this.store.readRunEvents(runId, {
      afterSeq: opts.afterSeq,
      ...(Number.isFinite(limit) ? { limit } : {}),
    });
    let last = stored.at(-1)?.seq ?? after;
    for (const ev of unwritten.sort((a, b) => a.seq - b.seq)) {
      if (stored.length >= limit) break;
      if (ev.seq <= last) continue;
      stored.push(ev);
      last = ev.seq;
    }
    return stored;
  }

  /** The highest seq of the run, stored or not written yet; 0 when there is none. */
  async lastSeq(runId: string): Promise<number> {
    const local = this.lastUnwrittenSeq(runId);
    if (local !== undefined) return local;
    const stored = await this.store.lastRunEventSeq(runId);
    // an event of the run may have arrived during the read
    return Math.max(stored, this.lastUnwrittenSeq(runId) ?? 0);
  }

  private lastUnwrittenSeq(runId: string): number | undefined {
    for (let i = this.buffer.length - 1; i >= this.head; i--)
      if (this.buffer[i].runId === runId) return this.buffer[i].seq;
    for (let i = this.inFlight.length - 1; i >= 0; i--)
      if (this.inFlight[i].runId === runId) return this.inFlight[i].seq;
    return undefined;
  }

  get stats(): RunEventWriterStats {
    return { ...this.counts, buffered: this.buffer.length - this.head };
  }

  /** Writes what is buffered and stops listening. Await it before the store closes. */
  async close(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    // nothing streams any more: what is left is written at once, without waiting for turns of the loop
    this.closing = true;
    await this.flush();
    this.closed = true;
    if (this.timerArmed) this.clock.clearTimeout(this.timer);
    this.timerArmed = false;
    const left = this.buffer.length - this.head;
    if (left > 0) this.drop(left, "the store closed while writes were failing");
    this.buffer = [];
    this.head = 0;
    this.settled(this.taken - this.left);
    const unsent = this.ends;
    this.ends = [];
    for (const e of unsent) e.reject(new Error("run events: the writer closed before the end could ride a batch"));
  }

  private arm(delayMs: number): void {
    this.timerArmed = true;
    this.timer = this.clock.setTimeout(() => {
      this.timerArmed = false;
      void this.flush();
    }, delayMs);
  }

  /** Writes one batch; false when it must be retried later (the batch is back at the head of the buffer). */
  private async write(batch: StoredRunEvent[]): Promise<boolean> {
    const audit: LedgerBatch["audit"] = [];
    const cost: Array<LedgerBatch["cost"][number]> = [];
    const riding: LedgerRider[] = [];
    // every event an end follows is stored once this batch commits: earlier batches did, or this one does
    const afterBatch = this.left + batch.length;
    const ends = this.ends.filter((e) => e.until <= afterBatch);
    if (ends.length > 0) this.ends = this.ends.filter((e) => e.until > afterBatch);
    for (const rider of this.riders) {
      const rows = rider.take();
      if (!rows.audit?.length && !rows.cost?.length) continue;
      riding.push(rider);
      if (rows.audit) audit.push(...rows.audit);
      if (rows.cost) cost.push(...rows.cost);
    }
    try {
      const { ignored } =
        riding.length > 0 || ends.length > 0
          ? await this.store.appendLedgerBatch({
              runEvents: batch,
              audit,
              cost,
              ...(ends.length > 0 ? { runEnds: ends.map((e) => e.end) } : {}),
            })
          : await this.store.appendRunEvents(batch);
      for (const rider of riding) rider.settle(true);
      for (const e of ends) e.resolve();
      this.counts.stored += batch.length - ignored;
      if (ignored > 0) this.noteDuplicates(ignored);
      this.settled(batch.length);
      if (this.retryDelayMs > 0) {
        this.retryDelayMs = 0;
        this.logger.info("run events: the store takes writes again", { buffered: this.buffer.length - this.head });
      }
      return true;
    } catch (err) {
      for (const rider of riding) rider.settle(false);
      // kept, in order, for the batch that writes these events again (or the next one, when they are dropped)
      this.ends = ends.concat(this.ends);
      this.counts.failedWrites++;
      if (retryable(err, this.isTransientStoreError)) {
        if (this.retryDelayMs === 0) {
          this.logger.warn("run events: cannot write to the store; keeping them in memory and retrying", {
            error: (err as Error).message,
            buffered: this.buffer.length - this.head + batch.length,
          });
        }
        this.retryDelayMs = Math.min(MAX_RETRY_DELAY_MS, Math.max(this.flushDelayMs, this.retryDelayMs * 2));
        this.buffer = batch.concat(this.buffer.slice(this.head));
        this.head = 0;
        return false;
      }
      this.drop(batch.length, `writing them failed: ${(err as Error)?.message ?? String(err)}`);
      this.settled(batch.length);
      return true;
    }
  }

  private dropOldest(): void {
    const excess = this.buffer.length - this.head - this.maxBuffered;
    // O(1): the front is skipped, not spliced out (one splice per event made a full buffer cost O(n) per event)
    this.head += excess;
    this.compact();
    this.settled(excess);
    // logged once per 1,000 so a long fault does not flood the log
    const before = this.counts.dropped;
    this.counts.dropped += excess;
    if (Math.floor(before / 1000) !== Math.floor(this.counts.dropped / 1000) || before === 0) {
      // not only while writes fail: a writer that cannot keep up with the events fills the buffer too
      this.logger.warn(
        "run events: buffer full (the store is failing or slower than the events); dropping the oldest",
        {
          dropped: this.counts.dropped,
          maxBuffered: this.maxBuffered,
        },
      );
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

/**
 * Worth retrying: the disk is full or failing, another process held the database longer than busy_timeout, or the
 * node's rule says so (the Postgres server is unreachable for now: restart, broken connection).
 */
function retryable(err: unknown, isTransientStoreError: (err: unknown) => boolean): boolean {
  if (isStorageFault(err) || err instanceof StorageUnavailableError) return true;
  const code = (err as { code?: unknown } | undefined)?.code;
  return (typeof code === "string" && code.startsWith("SQLITE_BUSY")) || isTransientStoreError(err);
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
