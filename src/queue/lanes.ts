/**
 * Lane scheduler: every agent run goes through here, so it is on the hot path of every turn.
 *
 * A lane is a named FIFO queue with a concurrency limit. A run holds its session lane (`session:<key>`,
 * one at a time) and then a global lane (`main` by default). Within a lane, foreground entries go before
 * normal ones and normal before background; an entry that already holds a slot is never preempted.
 *
 * Cost model: taking a free slot allocates one slot object and no timer. Only an entry that really has to
 * wait gets a queue node, and a warning timer when someone listens for wait warnings. Queues are intrusive
 * doubly linked lists per priority, so enqueue, dequeue and removal on abort are O(1). A lane with nothing
 * active and nothing queued is deleted, so memory does not grow with the number of sessions ever seen.
 */
import { availableParallelism } from "node:os";

export type LanePriority = "foreground" | "normal" | "background";

/** What a wait warning tells: enough to see whether a lane is saturated or one entry is unlucky. */
export interface LaneWaitInfo {
  lane: string;
  label: string | undefined;
  priority: LanePriority;
  waitedMs: number;
  /** Entries that will start before this one (higher priority, or same priority and queued earlier). */
  queuedAhead: number;
  queuedBehind: number;
  active: number;
}

export interface LaneSchedulerOptions {
  /** Concurrency of a lane the first time it is used. Default: 1 for every lane. */
  concurrency?: (lane: string) => number;
  /** Default 2000. A queued entry waiting longer than this is reported once through `onWaitWarning`. */
  warnAfterMs?: number;
  /** Called once per entry still waiting after `warnAfterMs`. Without it no warning timers are created. */
  onWaitWarning?: (info: LaneWaitInfo) => void;
  /** Injected clock for wait times. Default `Date.now`. */
  now?: () => number;
}

export interface EnqueueOptions {
  priority?: LanePriority;
  /** Aborting removes a still-queued entry at once. Once the slot is granted the signal is the caller's. */
  signal?: AbortSignal;
  /** Shown in wait warnings, e.g. a run id. */
  label?: string;
  /**
   * `runInSessionAndGlobalLanes` only: once both slots are held, firing this frees them before the task ends
   * (stuck-session recovery of a run that ignored its abort), so the session's next run need not wait for it.
   */
  release?: AbortSignal;
}

/** A held slot. `release` is idempotent so a `finally` plus an error path can both call it safely. */
export interface LaneSlot {
  release(): void;
  /** Time spent queued before the slot was granted: a phase of its own, never counted as a stall. */
  readonly waitedMs: number;
}

export interface LaneWait {
  lane: string;
  waitedMs: number;
}

export interface SessionAndGlobalWait {
  sessionWaitMs: number;
  globalWaitMs: number;
}

export interface LaneSnapshot {
  active: number;
  queued: number;
  concurrency: number;
}

export const DEFAULT_GLOBAL_LANE = "main";
export const SESSION_LANE_PREFIX = "session:";
export const DEFAULT_WARN_AFTER_MS = 2000;

export function sessionLaneName(sessionKey: string): string {
  return SESSION_LANE_PREFIX + sessionKey;
}

/** Default for `agents.defaults.maxConcurrent`: runs are mostly waiting on the network, not on the CPU. */
export function defaultMaxConcurrent(cpus: number = availableParallelism()): number {
  return Math.max(8, 4 * cpus);
}

/**
 * Builds a `concurrency` option from configured limits. Session lanes are always 1 whatever the table says,
 * because a session's transcript must only ever be written by one run; lanes not in the table run one at a time.
 */
export function laneConcurrencyFrom(limits: Readonly<Record<string, number>>): (lane: string) => number {
  return (lane) => {
    if (lane.startsWith(SESSION_LANE_PREFIX)) return 1;
    return Object.hasOwn(limits, lane) ? limits[lane] : 1;
  };
}

export class LaneAbortedError extends Error {
  override readonly name = "LaneAbortedError";
  readonly lane: string;
  /** The signal's reason, unchanged, so callers can tell a user cancel from a timeout. */
  readonly reason: unknown;

  constructor(lane: string, reason: unknown) {
    super(`waiting for lane "${lane}" was aborted${describeReason(reason)}`, { cause: reason });
    this.lane = lane;
    this.reason = reason;
  }
}

export class LaneClearedError extends Error {
  override readonly name = "LaneClearedError";
  readonly lane: string;
  readonly reason: string | undefined;

  constructor(lane: string, reason: string | undefined) {
    super(`lane "${lane}" was cleared while this entry was queued${reason ? `: ${reason}` : ""}`);
    this.lane = lane;
    this.reason = reason;
  }
}

function describeReason(reason: unknown): string {
  if (reason instanceof Error) return `: ${reason.message}`;
  if (typeof reason === "string" && reason) return `: ${reason}`;
  return "";
}

// Ranks index the per-priority queues; lower runs first.
const PRIORITY_NAMES: readonly LanePriority[] = ["foreground", "normal", "background"];
const NORMAL_RANK = 1;

function rankOf(priority: LanePriority | undefined): number {
  if (priority === undefined) return NORMAL_RANK;
  const rank = PRIORITY_NAMES.indexOf(priority);
  if (rank < 0) {
    throw new TypeError(`lane priority must be one of ${PRIORITY_NAMES.join(", ")}; got ${JSON.stringify(priority)}`);
  }
  return rank;
}

function normalizeLimit(n: number): number {
  // A misconfigured limit must not wedge a lane forever (0, negative, NaN), so it falls back to serial.
  if (!(n >= 1)) return 1;
  return n === Number.POSITIVE_INFINITY ? n : Math.floor(n);
}

/**
 * A queued wait. It is its own abort listener (EventListenerObject) so waiting with a signal costs no extra
 * closure, and it carries its own list links so removal on abort needs no search.
 */
class Entry {
  prev: Entry | undefined = undefined;
  next: Entry | undefined = undefined;
  linked = false;
  timer: NodeJS.Timeout | undefined = undefined;

  constructor(
    readonly lane: Lane,
    readonly rank: number,
    readonly signal: AbortSignal | undefined,
    readonly label: string | undefined,
    readonly enqueuedAt: number,
    readonly resolve: (slot: LaneSlot) => void,
    readonly reject: (err: Error) => void,
  ) {}

  handleEvent(): void {
    this.lane.core.abortQueued(this);
  }
}

class Lane {
  active = 0;
  queued = 0;
  private readonly heads: (Entry | undefined)[] = [undefined, undefined, undefined];
  private readonly tails: (Entry | undefined)[] = [undefined, undefined, undefined];
  private readonly counts: number[] = [0, 0, 0];

  constructor(
    readonly core: LaneCore,
    readonly name: string,
    public limit: number,
  ) {}

  push(entry: Entry): void {
    const r = entry.rank;
    const tail = this.tails[r];
    if (tail === undefined) this.heads[r] = entry;
    else {
      tail.next = entry;
      entry.prev = tail;
    }
    this.tails[r] = entry;
    this.counts[r]++;
    this.queued++;
    entry.linked = true;
  }

  unlink(entry: Entry): void {
    const r = entry.rank;
    const { prev, next } = entry;
    if (prev === undefined) this.heads[r] = next;
    else prev.next = next;
    if (next === undefined) this.tails[r] = prev;
    else next.prev = prev;
    entry.prev = undefined;
    entry.next = undefined;
    entry.linked = false;
    this.counts[r]--;
    this.queued--;
  }

  /** Next entry to start: highest priority first, FIFO within it. */
  peek(): Entry | undefined {
    return this.heads[0] ?? this.heads[1] ?? this.heads[2];
  }

  /** O(position), but only called when a wait warning fires, never on the hot path. */
  positionOf(entry: Entry): number {
    let ahead = 0;
    for (let r = 0; r < entry.rank; r++) ahead += this.counts[r];
    for (let e = this.heads[entry.rank]; e !== undefined && e !== entry; e = e.next) ahead++;
    return ahead;
  }
}

class Slot implements LaneSlot {
  private lane: Lane | undefined;

  constructor(
    lane: Lane,
    readonly waitedMs: number,
  ) {
    this.lane = lane;
  }

  release(): void {
    const lane = this.lane;
    if (lane === undefined) return;
    this.lane = undefined;
    lane.core.release(lane);
  }
}

function fireWaitWarning(entry: Entry): void {
  entry.timer = undefined;
  if (entry.linked) entry.lane.core.warn(entry);
}

/**
 * The scheduler's state and mechanics. Kept apart from the public class so that entries, slots and timers
 * can call into it without those methods becoming part of the public API.
 */
class LaneCore {
  readonly lanes = new Map<string, Lane>();
  // Explicit limits must outlive the lane object, which is dropped whenever the lane goes idle.
  // This map only grows with setConcurrency calls (configuration), not with traffic.
  readonly overrides = new Map<string, number>();

  constructor(
    private readonly concurrency: ((lane: string) => number) | undefined,
    private readonly warnAfterMs: number,
    private readonly onWaitWarning: ((info: LaneWaitInfo) => void) | undefined,
    private readonly now: () => number,
  ) {}

  acquire(name: string, opts: EnqueueOptions | undefined): Promise<LaneSlot> {
    if (typeof name !== "string" || name.length === 0) {
      return Promise.reject(new TypeError(`lane name must be a non-empty string; got ${JSON.stringify(name)}`));
    }
    let rank: number;
    try {
      rank = rankOf(opts?.priority);
    } catch (err) {
      return Promise.reject(err);
    }
    const signal = opts?.signal;
    // A run cancelled before it asked for a slot must not start, even if a slot is free.
    if (signal?.aborted) return Promise.reject(new LaneAbortedError(name, signal.reason));

    let lane = this.lanes.get(name);
    if (lane === undefined) {
      lane = new Lane(this, name, this.limitFor(name));
      this.lanes.set(name, lane);
    }
    if (lane.queued === 0 && lane.active < lane.limit) {
      lane.active++;
      return Promise.resolve(new Slot(lane, 0));
    }

    const queuedLane = lane;
    return new Promise<LaneSlot>((resolve, reject) => {
      const entry = new Entry(queuedLane, rank, signal, opts?.label, this.now(), resolve, reject);
      queuedLane.push(entry);
      signal?.addEventListener("abort", entry, { once: true });
      if (this.onWaitWarning !== undefined && Number.isFinite(this.warnAfterMs)) {
        entry.timer = setTimeout(fireWaitWarning, this.warnAfterMs, entry);
        // A diagnostic must never keep the process alive on its own.
        entry.timer.unref?.();
      }
    });
  }

  release(lane: Lane): void {
    lane.active--;
    this.pump(lane);
  }

  /** Starts queued entries while slots are free, then forgets the lane if that left it idle. */
  pump(lane: Lane): void {
    while (lane.active < lane.limit) {
      const entry = lane.peek();
      if (entry === undefined) break;
      lane.unlink(entry);
      lane.active++;
      this.detach(entry);
      entry.resolve(new Slot(lane, this.now() - entry.enqueuedAt));
    }
    this.dropIfIdle(lane);
  }

  abortQueued(entry: Entry): void {
    if (!entry.linked) return;
    const lane = entry.lane;
    lane.unlink(entry);
    this.detach(entry);
    entry.reject(new LaneAbortedError(lane.name, entry.signal?.reason));
    this.dropIfIdle(lane);
  }

  clear(name: string, reason: string | undefined): number {
    const lane = this.lanes.get(name);
    if (lane === undefined) return 0;
    let cleared = 0;
    for (let entry = lane.peek(); entry !== undefined; entry = lane.peek()) {
      lane.unlink(entry);
      this.detach(entry);
      entry.reject(new LaneClearedError(name, reason));
      cleared++;
    }
    this.dropIfIdle(lane);
    return cleared;
  }

  setConcurrency(name: string, n: number): void {
    if (typeof n !== "number" || !(n >= 1) || (n !== Number.POSITIVE_INFINITY && !Number.isInteger(n))) {
      throw new RangeError(`concurrency of lane "${name}" must be an integer >= 1 or Infinity; got ${String(n)}`);
    }
    this.overrides.set(name, n);
    const lane = this.lanes.get(name);
    if (lane === undefined) return;
    lane.limit = n;
    this.pump(lane);
  }

  warn(entry: Entry): void {
    const lane = entry.lane;
    const ahead = lane.positionOf(entry);
    const info: LaneWaitInfo = {
      lane: lane.name,
      label: entry.label,
      priority: PRIORITY_NAMES[entry.rank],
      waitedMs: this.now() - entry.enqueuedAt,
      queuedAhead: ahead,
      queuedBehind: lane.queued - ahead - 1,
      active: lane.active,
    };
    try {
      this.onWaitWarning?.(info);
    } catch (err) {
      // Runs from a timer: a throwing diagnostics hook would otherwise crash the whole gateway.
      process.emitWarning(`lane wait warning handler failed: ${(err as Error)?.message ?? String(err)}`);
    }
  }

  private limitFor(name: string): number {
    const override = this.overrides.get(name);
    if (override !== undefined) return override;
    return this.concurrency === undefined ? 1 : normalizeLimit(this.concurrency(name));
  }

  /** An entry leaving the queue stops listening to its signal and its warning timer. */
  private detach(entry: Entry): void {
    if (entry.timer !== undefined) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
    }
    entry.signal?.removeEventListener("abort", entry);
  }

  private dropIfIdle(lane: Lane): void {
    if (lane.active === 0 && lane.queued === 0 && this.lanes.get(lane.name) === lane) {
      this.lanes.delete(lane.name);
    }
  }
}

export class LaneScheduler {
  readonly #core: LaneCore;

  constructor(opts: LaneSchedulerOptions = {}) {
    const warnAfterMs = opts.warnAfterMs ?? DEFAULT_WARN_AFTER_MS;
    if (typeof warnAfterMs !== "number" || Number.isNaN(warnAfterMs) || warnAfterMs < 0) {
      throw new RangeError(`warnAfterMs must be a number >= 0; got ${String(warnAfterMs)}`);
    }
    this.#core = new LaneCore(opts.concurrency, warnAfterMs, opts.onWaitWarning, opts.now ?? Date.now);
  }

  /** Waits for a slot in `lane`, runs `task`, and frees the slot however the task ends. */
  async run<T>(lane: string, task: (wait: LaneWait) => Promise<T> | T, opts?: EnqueueOptions): Promise<T> {
    const slot = await this.#core.acquire(lane, opts);
    try {
      return await task({ lane, waitedMs: slot.waitedMs });
    } finally {
      slot.release();
    }
  }

  /** Waits for a slot in `lane`. The caller must call `release()` exactly when its work is done. */
  acquire(lane: string, opts?: EnqueueOptions): Promise<LaneSlot> {
    return this.#core.acquire(lane, opts);
  }

  /** Rejects every queued entry with LaneClearedError and returns how many; work holding a slot is untouched. */
  clear(lane: string, reason?: string): number {
    return this.#core.clear(lane, reason);
  }

  /** Sets the lane's limit now and for future uses; raising it starts waiting entries at once. */
  setConcurrency(lane: string, n: number): void {
    this.#core.setConcurrency(lane, n);
  }

  /** Undefined when the lane is idle, because idle lanes are not kept. */
  snapshot(lane: string): LaneSnapshot | undefined {
    const l = this.#core.lanes.get(lane);
    return l === undefined ? undefined : { active: l.active, queued: l.queued, concurrency: l.limit };
  }

  /** Calls `fn` for every lane with active or queued work (idle lanes are not kept), without copying them. */
  forEachLane(fn: (lane: string, snapshot: LaneSnapshot) => void): void {
    for (const l of this.#core.lanes.values()) fn(l.name, { active: l.active, queued: l.queued, concurrency: l.limit });
  }

  /** Lanes currently held in memory: only those with active or queued work. */
  laneCount(): number {
    return this.#core.lanes.size;
  }
}

/**
 * Runs `task` holding the session lane and then the global lane, the order every agent run uses, so a busy
 * session never takes a global slot away from other sessions while it waits for itself.
 * Both slots are released in reverse order however the task ends; if waiting for the global lane fails
 * (aborted, cleared) the session slot is released before the error reaches the caller.
 */
export async function runInSessionAndGlobalLanes<T>(
  scheduler: LaneScheduler,
  sessionLane: string,
  globalLane: string,
  task: (wait: SessionAndGlobalWait) => Promise<T> | T,
  opts?: EnqueueOptions,
): Promise<T> {
  if (sessionLane === globalLane) {
    // Holding a lane while queueing on it again would deadlock a concurrency-1 lane.
    throw new TypeError(`session lane and global lane must differ; both are "${sessionLane}"`);
  }
  const session = await scheduler.acquire(sessionLane, opts);
  let global: LaneSlot;
  try {
    global = await scheduler.acquire(globalLane, opts);
  } catch (err) {
    session.release();
    throw err;
  }
  const releaseBoth = () => {
    global.release();
    session.release();
  };
  const early = opts?.release;
  if (early?.aborted) releaseBoth();
  else early?.addEventListener("abort", releaseBoth, { once: true });
  try {
    return await task({ sessionWaitMs: session.waitedMs, globalWaitMs: global.waitedMs });
  } finally {
    early?.removeEventListener("abort", releaseBoth);
    releaseBoth();
  }
}
