/**
 * The EventBusPort of gateway nodes sharing one Postgres (SPEC 18, issue 14 "events across nodes").
 *
 * Local runs (the ones this node emits) behave exactly as on the in-process bus: numbered here, delivered
 * synchronously to every listener. Their events reach the other nodes through the store: the run-event writer stores
 * them in batches and `appendRunEvents` announces each batch with a pointer `{k: "ev", runId, seq, sessionKey}` at
 * COMMIT on the session's own channel (notifier.ts `sessionChannel`), and the run's first batch once more with
 * `{k: "rs", ...}` on the node-level channel that every node hears.
 *
 * Channels (issue 33): a node LISTENs to a session's channel only while it follows one of the session's runs or a
 * client here watches the session, so a node whose clients follow nothing receives one `rs` and one `end` per run of
 * the fleet, not every batch; its CPU per turn does not grow with the number of nodes.
 *
 * Runs executing on other nodes are heard through those pointers: the node reads `run_events` after the last seq it
 * delivered (RunEventFollower) and hands each event, with its original seq and stored wire JSON, to the `subscribe`
 * and `subscribeRun` listeners, never to `subscribeLocal` ones (the writer would store it again, the audit ledger and
 * diagnostics would count it twice).
 *
 * A node follows a remote run only while a client of its own watches it: a `watchRun` of the run, a `watchSession` of
 * its session (pointers name the session, so a run the node never heard of is recognised without a read), or a
 * `subscribeRun` listener. A `subscribe` listener alone (the gateway's broadcaster, always there) follows nothing:
 * with N nodes each stored event used to be read N - 1 times, now only by the nodes whose clients look at it. A run
 * watched mid-flight is read from seq 1, then live. A follow ends at the run's terminal lifecycle event, at its end
 * notice, or when the last watch goes.
 *
 * Completion: `endRun` fires this node's end listeners at once and announces `{k: "end", runId, seq}` at the commit
 * of the run-event batch that stores its last events, or a later one (`rideEndNotice`: the writer's `announceEnd`, at
 * its batch pace, no commit of its own; without it, after `beforeEndNotice` in a NOTIFY of its own), and `endRun` is
 * called once the run record is written. So a remote `onRunEnd` listener (agent.wait, a repeated idempotency key) that reads the record on the
 * notice finds it final, and a follower that delivered up to `seq` has every event. Messages merged into a turn have
 * no lifecycle events of their own; the end notice is what ends them.
 *
 * Missed notifications (the LISTEN connection was down) are caught up on reconnect: the follower re-reads every run
 * it follows, runs waited for are looked up in the store, and the running runs of watched sessions are followed.
 */

import { addKeyedListener } from "../infra/keyed-listeners.js";
import type { AgentEvent, AgentEventData, AgentEventOf, AgentStream } from "../protocol/agent-events.js";
import { runEndPointer } from "../storage/postgres/end-pointer.js";
// types only at load: the driver (pg) is loaded by start(), so a SQLite process that loads the runtime never pays for it
import type { NotifyPointer, notify, PgNotifier, sessionChannel } from "../storage/postgres/notifier.js";
import type { Queryable } from "../storage/postgres/pool.js";
import type { FollowedEvent, RunEventFollower } from "../storage/postgres/run-follower.js";
import type { Store } from "../storage/types.js";
import type { AgentEventListener, EventBusPort } from "./bus-port.js";
import { rememberAgentEventJson } from "./event-json.js";

/** What the bus needs of the Postgres store: its pool, its node-level NOTIFY channel and the node's one LISTEN connection. */
export interface PgBusSource {
  readonly pool: Queryable;
  readonly channel: string;
  notifier(): Promise<PgNotifier>;
}

export interface PgEventBusOptions {
  source: PgBusSource;
  /** run records and stored seqs, read when notifications may have been missed */
  store: Pick<Store, "getRun" | "lastRunEventSeq" | "listRuns">;
  now?: () => number;
  /** Resolves once the events emitted so far are stored; the end notice waits for it. */
  beforeEndNotice?: () => Promise<unknown>;
  /**
   * Sends a run's end notice at the commit of the run-event batch that stores (or follows) its last events (the
   * writer's `announceEnd`): no commit of its own. When it rejects (the writer closed), the notice goes the old way:
   * `beforeEndNotice`, then a NOTIFY of its own.
   */
  rideEndNotice?: (end: { runId: string; seq: number; sessionKey?: string }) => Promise<void>;
  /** A read, an announcement or a catch-up failed: reported, never thrown. */
  onError?: (err: Error) => void;
  /** How often an end notice is tried before it is given up (the reader's reconnect catch-up still finds the end). */
  endNoticeAttempts?: number;
  /** Timers between end-notice attempts (default setTimeout). */
  setTimeout?: (fn: () => void, ms: number) => unknown;
}

interface RemoteRun {
  /** the follower's unfollow, once the session's channel is listened to and the first read started */
  followOff?: () => void;
  /** releases this run's hold on its session's channel */
  channelOff?: () => void;
  /** stopped following: a LISTEN or lookup finishing later releases what it got */
  dropped: boolean;
  /** the run's session when a pointer named it (a session watch may be its reason) */
  sessionKey?: string;
  /** the highest seq delivered */
  delivered: number;
  /** from the end notice: the run is over once `delivered` reaches it */
  endSeq?: number;
  terminal: boolean;
}

/** At most this many running runs are picked up after a reconnect (each costs a read); later pointers bring the rest. */
const CATCH_UP_RUNS = 1000;
/** Run ids whose end was seen, so a late pointer does not start following them again from seq 1. Bounded. */
const MAX_ENDED = 10_000;

export class PgEventBus implements EventBusPort {
  readonly spansNodes = true;
  private readonly all = new Set<AgentEventListener>();
  private readonly locals = new Set<AgentEventListener>();
  private readonly runListeners = new Map<string, Set<AgentEventListener>>();
  private readonly endListeners = new Map<string, Set<() => void>>();
  /** how many watches each run and each session has (clients of this node following them) */
  private readonly watchedRuns = new Map<string, number>();
  private readonly watchedSessions = new Map<string, number>();
  /** this node's runs and their last seq */
  private readonly seqByRun = new Map<string, number>();
  /** this node's runs' sessions (the end notice names it, for nodes watching the session) */
  private readonly sessionOfLocal = new Map<string, string>();
  private readonly remote = new Map<string, RemoteRun>();
  private readonly ended = new Map<string, true>();
  /** runs of other nodes heard of through pointers alone (not followed): their start was reported, their end will be */
  private readonly heardOf = new Map<string, true>();
  private readonly statusListeners = new Set<(sessionKey: string) => void>();
  private readonly now: () => number;
  private follower: RunEventFollower | undefined;
  private notifier: PgNotifier | undefined;
  private notify: typeof notify | undefined;
  private sessionChannel: typeof sessionChannel | undefined;
  /** the watched sessions' holds on their channels (resolved once the LISTEN is in place) */
  private readonly sessionChannels = new Map<string, Promise<(() => void) | undefined>>();
  /** lookups and LISTENs under way before a follow starts, end notices being sent (idle() waits for them) */
  private readonly attaching = new Set<Promise<void>>();
  private readonly offs: Array<() => void> = [];
  private readonly started: Promise<void>;
  private closed = false;

  constructor(private readonly opts: PgEventBusOptions) {
    this.now = opts.now ?? Date.now;
    this.started = this.start();
    // reported here for a process that never asks `ready()` (a CLI run): an unheard rejection would end it
    this.started.catch((err: Error) => this.report(new Error(`not listening to other nodes: ${err.message}`)));
  }

  /** Resolves once the bus listens on the node's LISTEN connection (rejects if that connection cannot be made). */
  ready(): Promise<void> {
    return this.started;
  }

  private async start(): Promise<void> {
    const [{ RunEventFollower }, notifierModule, notifier] = await Promise.all([
      import("../storage/postgres/run-follower.js"),
      import("../storage/postgres/notifier.js"),
      this.opts.source.notifier(),
    ]);
    this.notify = notifierModule.notify;
    this.sessionChannel = notifierModule.sessionChannel;
    this.notifier = notifier;
    if (this.closed) return;
    this.follower = new RunEventFollower(this.opts.source.pool, notifier, { onError: (err) => this.report(err) });
    this.offs.push(
      notifier.subscribe((p) => this.onPointer(p)),
      notifier.onReconnect(() => void this.catchUp()),
    );
    // runs that began before this node listened and that a client already watches
    for (const runId of new Set([...this.runListeners.keys(), ...this.watchedRuns.keys()])) this.considerFollow(runId);
    for (const sessionKey of this.watchedSessions.keys()) this.holdSessionChannel(sessionKey);
    if (this.watchedSessions.size > 0) void this.catchUp();
  }

  subscribe(listener: AgentEventListener): () => void {
    this.all.add(listener);
    return () => this.all.delete(listener);
  }

  watchRun(runId: string): () => void {
    this.watchedRuns.set(runId, (this.watchedRuns.get(runId) ?? 0) + 1);
    this.considerFollow(runId);
    return once(() => {
      if (release(this.watchedRuns, runId)) this.dropIfUnwanted(runId);
    });
  }

  watchSession(sessionKey: string): () => void {
    const first = !this.watchedSessions.has(sessionKey);
    this.watchedSessions.set(sessionKey, (this.watchedSessions.get(sessionKey) ?? 0) + 1);
    // the session's channel first (its pointers from now on), then a run already under way elsewhere is picked up now
    if (first) {
      const held = this.holdSessionChannel(sessionKey);
      void held?.then(() => this.followRunningOf(sessionKey));
    }
    return once(() => {
      if (!release(this.watchedSessions, sessionKey)) return;
      const held = this.sessionChannels.get(sessionKey);
      this.sessionChannels.delete(sessionKey);
      void held?.then((off) => off?.());
      for (const [runId, st] of [...this.remote]) if (st.sessionKey === sessionKey) this.dropIfUnwanted(runId);
    });
  }

  /**
   * Hears that a run of another node this node does not follow started (its first pointer) or ended (its end notice)
   * in a session: what `sessions.changed` "status" needs, from the pointers alone. Returns the unsubscribe.
   */
  onRemoteRunStatus(listener: (sessionKey: string) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  /** Queries of `run_events` this node made for other nodes' runs, the events they delivered, the runs followed now. */
  followStats(): { reads: number; events: number; following: number } {
    return this.follower?.stats() ?? { reads: 0, events: 0, following: 0 };
  }

  subscribeLocal(listener: AgentEventListener): () => void {
    this.locals.add(listener);
    return () => this.locals.delete(listener);
  }

  subscribeRun(runId: string, listener: AgentEventListener): () => void {
    const off = addKeyedListener(this.runListeners, runId, listener, () => this.dropIfUnwanted(runId));
    this.considerFollow(runId);
    return off;
  }

  emit<S extends AgentStream>(runId: string, sessionKey: string, stream: S, data: AgentEventData[S]): AgentEventOf<S> {
    const last = this.seqByRun.get(runId);
    // the run executes here from now on (a run taken over from a lost node): its events are ours, not followed
    if (last === undefined) this.becomeLocal(runId);
    const seq = (last ?? 0) + 1;
    this.seqByRun.set(runId, seq);
    // an adopted run's numbering was resumed (resumeSeq): its first emit here is not its seq 1
    if (!this.sessionOfLocal.has(runId)) this.sessionOfLocal.set(runId, sessionKey);
    const event: AgentEventOf<S> = { runId, seq, stream, ts: this.now(), sessionKey, data };
    for (const listener of this.locals) notify1(listener, event as AgentEvent);
    for (const listener of this.all) notify1(listener, event as AgentEvent);
    const own = this.runListeners.get(runId);
    if (own) for (const listener of own) notify1(listener, event as AgentEvent);
    return event;
  }

  resumeSeq(runId: string, lastSeq: number): void {
    this.becomeLocal(runId);
    this.seqByRun.set(runId, lastSeq);
  }

  endRun(runId: string): void {
    const seq = this.seqByRun.get(runId) ?? this.remote.get(runId)?.delivered ?? 0;
    const sessionKey = this.sessionOfLocal.get(runId);
    this.sessionOfLocal.delete(runId);
    this.seqByRun.delete(runId);
    this.stopFollowing(runId);
    this.markEnded(runId);
    this.fireEnd(runId);
    this.track(this.announceEnd(runId, seq, sessionKey));
  }

  onRunEnd(runId: string, listener: () => void): () => void {
    return addKeyedListener(this.endListeners, runId, listener);
  }

  /** Resolves once every read started so far has delivered its events and every end notice is out (tests settle on it). */
  async idle(): Promise<void> {
    await this.started.catch(() => {});
    while (this.attaching.size > 0) await Promise.all(this.attaching);
    await this.follower?.idle();
  }

  /** How many sessions' channels this node listens to now (what its clients follow; tests and stats). */
  listenedSessions(): number {
    return this.notifier?.extraChannels ?? 0;
  }

  /** Stops following and listening (the notifier and pool are the store's). */
  close(): void {
    this.closed = true;
    for (const off of this.offs.splice(0)) off();
    for (const st of this.remote.values()) unfollow(st);
    this.remote.clear();
    for (const held of this.sessionChannels.values()) void held.then((off) => off?.());
    this.sessionChannels.clear();
    this.follower?.close();
  }

  private becomeLocal(runId: string): void {
    this.stopFollowing(runId);
    this.ended.delete(runId);
  }

  /** Follows `runId` (from seq 1) when it is not ours, not followed yet, not over, and a client here watches it. */
  private considerFollow(runId: string, sessionKey?: string): RemoteRun | undefined {
    if (!this.follower || this.closed) return undefined;
    if (this.seqByRun.has(runId) || this.remote.has(runId) || this.ended.has(runId)) return undefined;
    if (!this.wanted(runId, sessionKey)) return undefined;
    const st: RemoteRun = { dropped: false, delivered: 0, terminal: false, sessionKey };
    this.remote.set(runId, st);
    this.track(this.attach(runId, st));
    return st;
  }

  /**
   * Listens to the run's session's channel (its session looked up when no pointer named it), then reads from seq 1:
   * in that order, so no pointer falls between the read and the LISTEN. A run whose session is not known yet (no
   * record) is read now and at its `rs`/`end` notices, which name the session (then its channel is listened to).
   */
  private async attach(runId: string, st: RemoteRun): Promise<void> {
    if (st.sessionKey === undefined) {
      try {
        st.sessionKey = (await this.opts.store.getRun(runId))?.sessionKey;
      } catch (err) {
        this.report(err as Error);
      }
    }
    if (st.sessionKey !== undefined) await this.listenFor(st, st.sessionKey);
    if (st.dropped || !this.follower) return;
    st.followOff = this.follower.follow(runId, st.delivered, (e) => this.deliverRemote(st, e));
  }

  private async listenFor(st: RemoteRun, sessionKey: string): Promise<void> {
    if (st.channelOff || !this.notifier || !this.sessionChannel) return;
    const channel = this.sessionChannel(this.opts.source.channel, sessionKey);
    let off: (() => void) | undefined;
    try {
      off = await this.notifier.listen(channel);
    } catch (err) {
      this.report(err as Error);
      return;
    }
    if (st.dropped || st.channelOff) off();
    else st.channelOff = off;
  }

  /** The session's channel, held while a client here watches the session. */
  private holdSessionChannel(sessionKey: string): Promise<(() => void) | undefined> | undefined {
    const notifier = this.notifier;
    if (!notifier || !this.sessionChannel || this.closed) return undefined;
    const held = notifier.listen(this.sessionChannel(this.opts.source.channel, sessionKey)).catch((err: Error) => {
      this.report(err);
      return undefined;
    });
    this.sessionChannels.set(sessionKey, held);
    this.track(held.then(() => {}));
    return held;
  }

  private track(p: Promise<void>): void {
    this.attaching.add(p);
    void p.finally(() => this.attaching.delete(p));
  }

  private wanted(runId: string, sessionKey: string | undefined): boolean {
    return (
      this.runListeners.has(runId) ||
      this.watchedRuns.has(runId) ||
      (sessionKey !== undefined && this.watchedSessions.has(sessionKey))
    );
  }

  private dropIfUnwanted(runId: string): void {
    if (this.wanted(runId, this.remote.get(runId)?.sessionKey)) return;
    this.stopFollowing(runId);
  }

  /** The runs of a newly watched session that execute elsewhere now: followed from seq 1 (one indexed query). */
  private async followRunningOf(sessionKey: string): Promise<void> {
    if (!this.follower || this.closed) return;
    try {
      const running = await this.opts.store.listRuns({ sessionKey, statuses: ["running"], limit: CATCH_UP_RUNS });
      for (const run of running) this.considerFollow(run.runId, sessionKey);
    } catch (err) {
      this.report(err as Error);
    }
  }

  private stopFollowing(runId: string): void {
    const st = this.remote.get(runId);
    if (!st) return;
    unfollow(st);
    this.remote.delete(runId);
  }

  private deliverRemote(st: RemoteRun, e: FollowedEvent): void {
    if (this.remote.get(e.runId) !== st) return;
    st.delivered = e.seq;
    let event: AgentEvent;
    try {
      event = JSON.parse(e.event) as AgentEvent;
    } catch (err) {
      this.report(
        new Error(`run ${e.runId} event ${e.seq}: the stored JSON does not parse (${(err as Error).message})`),
      );
      return;
    }
    rememberAgentEventJson(event, e.event);
    for (const listener of this.all) notify1(listener, event);
    const own = this.runListeners.get(e.runId);
    if (own) for (const listener of own) notify1(listener, event);
    if (event.stream === "lifecycle") {
      const phase = (event.data as { phase?: string }).phase;
      if (phase === "end" || phase === "error") st.terminal = true;
    }
    this.settle(e.runId, st);
  }

  /** A followed run is over once its end notice's seq is delivered, or (no notice yet) at its terminal event. */
  private settle(runId: string, st: RemoteRun): void {
    if (st.endSeq !== undefined) {
      if (st.delivered < st.endSeq) return;
      this.stopFollowing(runId);
      this.markEnded(runId);
      this.fireEnd(runId);
      return;
    }
    if (!st.terminal) return;
    // the end notice (record written) still fires the end listeners; only the reads stop here
    this.stopFollowing(runId);
    this.markEnded(runId);
  }

  private onPointer(p: NotifyPointer): void {
    if (typeof p.runId !== "string") return;
    const runId = p.runId;
    const sessionKey = typeof p.sessionKey === "string" ? p.sessionKey : undefined;
    // a run followed before its session was known: its start or end notice names it
    const known = this.remote.get(runId);
    if (known && known.sessionKey === undefined && sessionKey !== undefined) {
      known.sessionKey = sessionKey;
      this.track(this.listenFor(known, sessionKey));
    }
    if (p.k === "end") {
      if (this.seqByRun.has(runId)) return;
      // a watched run whose events all went by before the watch: read them now, then it ends
      const st = known ?? this.considerFollow(runId, sessionKey);
      if (this.heardOf.delete(runId) && !st && sessionKey !== undefined) this.reportStatus(sessionKey);
      if (st) {
        st.endSeq = typeof p.seq === "number" ? p.seq : 0;
        this.settle(runId, st);
        return;
      }
      this.markEnded(runId);
      this.fireEnd(runId);
      return;
    }
    if (p.k !== undefined && p.k !== "ev" && p.k !== "rs") return;
    // a followed run's follower reads on its own; another is followed only if a client here watches it
    if (this.considerFollow(runId, sessionKey) || sessionKey === undefined || this.statusListeners.size === 0) return;
    if (this.seqByRun.has(runId) || this.remote.has(runId) || this.ended.has(runId) || this.heardOf.has(runId)) return;
    this.heardOf.set(runId, true);
    if (this.heardOf.size > MAX_ENDED) this.heardOf.delete(this.heardOf.keys().next().value as string);
    this.reportStatus(sessionKey);
  }

  private reportStatus(sessionKey: string): void {
    for (const listener of this.statusListeners) {
      try {
        listener(sessionKey);
      } catch (err) {
        process.emitWarning(`run status listener failed: ${(err as Error)?.message ?? String(err)}`);
      }
    }
  }

  /**
   * After a reconnect (or at start): notifications may have been missed. Runs waited for are looked up (a run whose
   * record is final has ended); the running runs of watched sessions are followed.
   */
  private async catchUp(): Promise<void> {
    try {
      for (const runId of [...this.endListeners.keys()]) {
        if (this.seqByRun.has(runId)) continue;
        const run = await this.opts.store.getRun(runId);
        if (!run || run.status === "queued" || run.status === "running") continue;
        const st = this.remote.get(runId);
        if (st) {
          st.endSeq = await this.opts.store.lastRunEventSeq(runId);
          this.settle(runId, st);
        } else {
          this.markEnded(runId);
          this.fireEnd(runId);
        }
      }
      for (const sessionKey of [...this.watchedSessions.keys()]) await this.followRunningOf(sessionKey);
    } catch (err) {
      this.report(err as Error);
    }
  }

  private markEnded(runId: string): void {
    this.ended.set(runId, true);
    if (this.ended.size > MAX_ENDED) {
      const oldest = this.ended.keys().next().value;
      if (oldest !== undefined) this.ended.delete(oldest);
    }
  }

  private fireEnd(runId: string): void {
    const ends = this.endListeners.get(runId);
    if (!ends) return;
    this.endListeners.delete(runId);
    for (const listener of ends) {
      try {
        listener();
      } catch (err) {
        process.emitWarning(`run end listener failed: ${(err as Error)?.message ?? String(err)}`);
      }
    }
  }

  /**
   * The end notice goes out after the run's events are stored. A failed NOTIFY (the connection was lost) is tried
   * again a few times; a node that still missed it finds the end in the store at its next reconnect.
   */
  private async announceEnd(runId: string, seq: number, sessionKey: string | undefined): Promise<void> {
    if (this.closed) return;
    const end = { runId, seq, ...(sessionKey !== undefined ? { sessionKey } : {}) };
    if (this.opts.rideEndNotice) {
      try {
        await this.opts.rideEndNotice(end);
        return;
      } catch {
        // the writer is closed: what it never sent goes on its own below
      }
    }
    const attempts = this.opts.endNoticeAttempts ?? 5;
    const later = this.opts.setTimeout ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
    for (let i = 0; i < attempts && !this.closed; i++) {
      try {
        await this.opts.beforeEndNotice?.();
        await this.started;
        if (!this.notify) return;
        await this.notify(this.opts.source.pool, this.opts.source.channel, runEndPointer(end));
        return;
      } catch (err) {
        if (i === attempts - 1) {
          this.report(new Error(`run ${runId}: its end could not be announced: ${(err as Error).message}`));
          return;
        }
        await new Promise<void>((resolve) => later(resolve, 100 * 2 ** i));
      }
    }
  }

  private report(err: Error): void {
    if (this.opts.onError) this.opts.onError(err);
    else process.emitWarning(`event bus: ${err.message}`);
  }
}

/** Stops reading a remote run and releases its hold on its session's channel (now or when the LISTEN comes back). */
function unfollow(st: RemoteRun): void {
  st.dropped = true;
  st.followOff?.();
  st.channelOff?.();
  st.followOff = undefined;
  st.channelOff = undefined;
}

/** Drops one reference of `key`; true when it was the last. */
function release(counts: Map<string, number>, key: string): boolean {
  const n = counts.get(key);
  if (n === undefined) return false;
  if (n > 1) {
    counts.set(key, n - 1);
    return false;
  }
  counts.delete(key);
  return true;
}

/** A release that counts once however often it is called. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

function notify1(listener: AgentEventListener, event: AgentEvent): void {
  try {
    listener(event);
  } catch (err) {
    process.emitWarning(`agent event listener failed: ${(err as Error)?.message ?? String(err)}`);
  }
}
