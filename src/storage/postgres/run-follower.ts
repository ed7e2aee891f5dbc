import { type NotifyPointer, notify, type PgNotifier } from "./notifier.js";
import type { Queryable } from "./pool.js";

/** One stored run event as a follower delivers it: the seq and the wire JSON exactly as it was stored. */
export interface FollowedEvent {
  runId: string;
  seq: number;
  event: string;
}

/**
 * The pointer to a run's stored events up to `seq`. The notifier's channel is shared with other announcements (session
 * ownership, ...), so every pointer names its kind: `k: "ev"` for run events. It names the run's session, so a node
 * whose clients watch that session starts following a run it never heard of without reading anything first.
 */
export function runEventPointer(
  runId: string,
  seq: number,
  sessionKey?: string,
): { k: "ev"; runId: string; seq: number; sessionKey?: string } {
  return sessionKey === undefined ? { k: "ev", runId, seq } : { k: "ev", runId, seq, sessionKey };
}

/**
 * Announces a batch of stored run events: one pointer per run, carrying the run's highest seq in the batch. Call it in
 * the transaction that inserts the rows, so the pointers go out at COMMIT, when the rows are visible.
 */
export async function notifyRunEvents(
  db: Queryable,
  channel: string,
  events: ReadonlyArray<{ runId: string; seq: number; sessionKey?: string }>,
): Promise<void> {
  for (const p of highestPerRun(events)) await notify(db, channel, runEventPointer(p.runId, p.seq, p.sessionKey));
}

/** One entry per run of a batch: its highest seq and its session. */
export function highestPerRun(
  events: ReadonlyArray<{ runId: string; seq: number; sessionKey?: string }>,
): Array<{ runId: string; seq: number; sessionKey?: string }> {
  const highest = new Map<string, { runId: string; seq: number; sessionKey?: string }>();
  for (const e of events) {
    const had = highest.get(e.runId);
    if (!had || e.seq > had.seq) highest.set(e.runId, { runId: e.runId, seq: e.seq, sessionKey: e.sessionKey });
  }
  return [...highest.values()];
}

interface Follow {
  lastSeq: number;
  deliver: (e: FollowedEvent) => void;
  reading: boolean;
  again: boolean;
  closed: boolean;
  /** after a failed read: the wait before the next try (doubles up to RETRY_MAX_MS); 0 while reads succeed */
  retryMs: number;
  retryTimer?: ReturnType<typeof setTimeout>;
}

/** A failed read (the connection was lost mid-read) is tried again after 250 ms, doubling up to 5 s. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;

/**
 * Follows runs that may execute on another node: a pointer (`{k: "ev", runId, seq}`) says there is more, and the events
 * themselves are read from `run_events` after the last seq delivered. So every event is delivered once, in seq
 * order, whatever the pointers do: several pointers for one read, pointers lost while the LISTEN connection was down
 * (every followed run is re-read after a reconnect), or none at all for events stored before the follow began (read
 * at once). Reads of one run never overlap; a pointer arriving during a read makes it read again when done.
 */
export class RunEventFollower {
  private readonly follows = new Map<string, Set<Follow>>();
  private readonly pageSize: number;
  private readonly offs: Array<() => void>;
  /** reads in progress, and who waits for there to be none (tests settle on it; a bus reports it) */
  private reading = 0;
  private idleWaiters: Array<() => void> = [];
  /** `run_events` queries made and rows delivered since start (what following other nodes' runs costs this node) */
  private readonly counts = { reads: 0, events: 0 };

  constructor(
    private readonly db: Queryable,
    notifier: PgNotifier,
    private readonly opts: { pageSize?: number; onError?: (err: Error) => void } = {},
  ) {
    this.pageSize = opts.pageSize ?? 500;
    this.offs = [
      notifier.subscribe((p) => this.onPointer(p)),
      notifier.onReconnect(() => {
        for (const [runId, set] of this.follows) for (const f of set) this.read(runId, f);
      }),
    ];
  }

  /** Delivers the run's events after `afterSeq`, then each new one as it is stored. Returns the unfollow function. */
  follow(runId: string, afterSeq: number, deliver: (e: FollowedEvent) => void): () => void {
    const f: Follow = { lastSeq: afterSeq, deliver, reading: false, again: false, closed: false, retryMs: 0 };
    const set = this.follows.get(runId) ?? new Set<Follow>();
    this.follows.set(runId, set);
    set.add(f);
    this.read(runId, f);
    return () => {
      f.closed = true;
      if (f.retryTimer !== undefined) clearTimeout(f.retryTimer);
      set.delete(f);
      if (set.size === 0 && this.follows.get(runId) === set) this.follows.delete(runId);
    };
  }

  /** Resolves once no read is in progress (at once when none is): everything pointed at so far is delivered. */
  idle(): Promise<void> {
    if (this.reading === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Queries of `run_events` made so far, the events they delivered, and the runs followed now. */
  stats(): { reads: number; events: number; following: number } {
    return { ...this.counts, following: this.follows.size };
  }

  /** Stops listening to the notifier (the notifier itself is the caller's). */
  close(): void {
    for (const off of this.offs) off();
    for (const set of this.follows.values()) {
      for (const f of set) {
        f.closed = true;
        if (f.retryTimer !== undefined) clearTimeout(f.retryTimer);
      }
    }
    this.follows.clear();
  }

  private onPointer(p: NotifyPointer): void {
    // other kinds of pointer share the channels; a run's start and end notices (node-level channel) say "up to seq"
    // too, which is how a run followed before its session's channel was known still gets read
    if ((p.k !== "ev" && p.k !== "rs" && p.k !== "end") || typeof p.runId !== "string") return;
    const set = this.follows.get(p.runId);
    if (!set) return;
    for (const f of set) if (typeof p.seq !== "number" || p.seq > f.lastSeq) this.read(p.runId, f);
  }

  private read(runId: string, f: Follow): void {
    if (f.closed) return;
    if (f.reading) {
      f.again = true;
      return;
    }
    f.reading = true;
    this.reading++;
    let failed = false;
    this.readAll(runId, f)
      .then(
        () => {
          f.retryMs = 0;
        },
        (err: Error) => {
          failed = true;
          // reported once per outage of this run's reads, not once per retry
          if (f.retryMs === 0) this.opts.onError?.(err);
        },
      )
      .finally(() => {
        f.reading = false;
        this.reading--;
        if (f.again) {
          f.again = false;
          this.read(runId, f);
        } else if (failed) this.retryLater(runId, f);
        if (this.reading === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      });
  }

  /**
   * The last pointer of a run may be the one whose read failed: without a retry its last events would wait for a
   * pointer that never comes. Reads are idempotent (after the last seq delivered), so trying again is safe.
   */
  private retryLater(runId: string, f: Follow): void {
    if (f.closed || f.retryTimer !== undefined) return;
    f.retryMs = Math.min(RETRY_MAX_MS, f.retryMs === 0 ? RETRY_FIRST_MS : f.retryMs * 2);
    f.retryTimer = setTimeout(() => {
      f.retryTimer = undefined;
      this.read(runId, f);
    }, f.retryMs);
    f.retryTimer.unref?.();
  }

  private async readAll(runId: string, f: Follow): Promise<void> {
    for (;;) {
      const { rows } = await this.db.query<{ seq: number; event: string }>(
        "SELECT seq, event FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        [runId, f.lastSeq, this.pageSize],
      );
      this.counts.reads++;
      this.counts.events += rows.length;
      for (const r of rows) {
        if (f.closed) return;
        f.lastSeq = r.seq;
        f.deliver({ runId, seq: r.seq, event: r.event });
      }
      if (rows.length < this.pageSize) return;
    }
  }
}
