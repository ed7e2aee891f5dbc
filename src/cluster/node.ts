import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { type Clock, systemClock } from "../infra/clock.js";
import type { ClusterDegraded } from "../protocol/payloads.js";
import type { QueueCluster } from "../queue/types.js";
import { NodeHeartbeat } from "../storage/postgres/node-heartbeat.js";
import { disownRunsOfLostSessions, disownRunsOfSession } from "../storage/postgres/node-takeover.js";
import { type NotifyPointer, notify } from "../storage/postgres/notifier.js";
import { unadoptQueuedInputs } from "../storage/postgres/queue-adopt.js";
import { DEFAULT_LEASE_MS, SessionLeases } from "../storage/postgres/session-leases.js";
import { ClusterIntake } from "./intake.js";
import { LeaseSessionLock } from "./lease-lock.js";
import { SessionOwnership } from "./ownership.js";
import { sweepOrphanedSessions } from "./sweeper.js";
import { takeOverLostRuns } from "./takeover.js";
import {
  type ClusterLogger,
  type ClusterStore,
  type LocalQueue,
  POINTER_ABORT,
  POINTER_INPUT,
  POINTER_RELEASED,
} from "./types.js";

export interface ClusterNodeOptions {
  store: ClusterStore;
  logger: ClusterLogger;
  /** `storage.postgres.leaseMs` (default 15000): lease length; heartbeat, sweep and dead-node watch every third. */
  leaseMs?: number;
  /** default: `<hostname>-<pid>-<random>` (a restarted process is a new node; the old one is dead to the others) */
  nodeId?: string;
  /**
   * The id is `cluster.nodeId`, the same across restarts: a live node with it refuses the start, and a dead earlier
   * process's leases and runs are given up at start (NodeHeartbeat `fixedId`).
   */
  fixedId?: boolean;
  /** session lock waits: `session.writeLock.acquireTimeoutMs` */
  acquireTimeoutMs: number;
  /** Tests pass a ManualClock (timers and lease times); without one leases are measured on the database's clock. */
  clock?: Clock;
}

/** A job one node of the deployment does at a time (cron): started when this node gets its lease, stopped on loss. */
export interface LeaderRole {
  gain(): Promise<void> | void;
  lose(): void;
}

/** The lease key of a role: not a session key (those are `agent:…`), so no session can hold it. */
export function leaderKey(role: string): string {
  return `loopgate:leader:${role}`;
}

export function newNodeId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/**
 * One gateway node among several on one Postgres (docs/scale-out.md): session ownership by lease, intake routing,
 * the beat (heartbeat, dead-node takeover, sweep, lost-lease check), the lease-backed SessionLockPort, and the drain
 * hand-off. Built only when the store is Postgres; the SQLite path never sees it.
 */
export class ClusterNode implements QueueCluster {
  readonly nodeId: string;
  readonly leaseMs: number;
  readonly ownership: SessionOwnership;
  readonly intake: ClusterIntake;
  readonly locks: LeaseSessionLock;
  private readonly heartbeat: NodeHeartbeat;
  private readonly clock: Clock;
  private readonly fixedClock?: Clock;
  private timer: unknown;
  private stopped = true;
  private ticking: Promise<void> = Promise.resolve();
  private unsubscribe?: () => void;
  private unReconnect?: () => void;
  private local?: LocalQueue;
  private readonly roles = new Map<string, LeaderRole>();
  /** when a beat last read which leases this node holds (the lock's fast path trusts them for half a lease) */
  private confirmedAt = Number.NEGATIVE_INFINITY;
  private flushEvents?: () => Promise<unknown>;
  /** the local queue, bound after construction (the runtime takes `locks` before the queue exists) */
  private readonly queue: LocalQueue;

  constructor(private readonly opts: ClusterNodeOptions) {
    this.nodeId = opts.nodeId ?? newNodeId();
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.clock = opts.clock ?? systemClock;
    this.fixedClock = opts.clock;
    const pool = opts.store.pool;
    const leases = new SessionLeases(pool, {
      nodeId: this.nodeId,
      leaseMs: this.leaseMs,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
    const local = () => this.local;
    this.queue = {
      adopt: (runs) => this.bound().adopt(runs),
      launched: (runId) => local()?.launched(runId) ?? false,
      hasWork: (key) => local()?.hasWork(key) ?? false,
      get draining() {
        return local()?.draining ?? false;
      },
      reportEnded: (run, ended) => this.bound().reportEnded(run, ended),
      abort: (key, runId) => this.bound().abort(key, runId),
    };
    this.ownership = new SessionOwnership(leases, (key) => this.queue.hasWork(key));
    this.intake = new ClusterIntake(pool, opts.store.channel, this.ownership, this.queue, opts.logger);
    this.locks = new LeaseSessionLock(this.ownership, {
      acquireTimeoutMs: opts.acquireTimeoutMs,
      confirmed: () => this.clock.now() - this.confirmedAt < this.leaseMs / 2,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
    this.heartbeat = new NodeHeartbeat(pool, {
      nodeId: this.nodeId,
      leaseMs: this.leaseMs,
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.fixedId ? { fixedId: true } : {}),
      onError: (err) => opts.logger.warn("cluster: heartbeat failed; retrying", { error: err.message }),
      onRejoined: () =>
        opts.logger.warn(
          "cluster: another node took this node for dead (no heartbeat for a lease) and took over its running sessions; it is registered again",
          { nodeId: this.nodeId },
        ),
    });
    opts.store.setFence?.((key) => this.ownership.tokenOf(key));
    opts.store.setRunNode?.(this.nodeId);
  }

  /**
   * The node's session queue (AgentService binds it before `start`), and how to flush the node's pending run events
   * to the store (drain: before its inputs go to another node, whose events are numbered after the stored ones).
   */
  attach(queue: LocalQueue, flushEvents?: () => Promise<unknown>): void {
    this.local = queue;
    this.flushEvents = flushEvents;
  }

  private bound(): LocalQueue {
    if (!this.local) throw new Error("cluster node: no session queue attached (AgentService.attachCluster)");
    return this.local;
  }

  get intervalMs(): number {
    return this.heartbeat.intervalMs;
  }

  /**
   * What `health` says of this node's membership: the store unreachable (the last heartbeat failed), or its leases
   * lost (no heartbeat went through for a whole lease: other nodes may have taken its sessions); undefined when well.
   */
  degraded(): ClusterDegraded | undefined {
    if (this.stopped) return undefined;
    const beat = this.heartbeat.state();
    if (beat.lapsed) {
      const silent = this.clock.now() - beat.lastOkAt;
      return {
        reason: "leases lost",
        message: `no heartbeat reached the store for ${silent} ms (storage.postgres.leaseMs is ${this.leaseMs}): this node's session leases have lapsed${beat.failing ? `; last error: ${beat.failing.error}` : ""}`,
        since: beat.lastOkAt + this.leaseMs,
      };
    }
    if (beat.failing)
      return {
        reason: "store unreachable",
        message: `the heartbeat cannot reach the store: ${beat.failing.error}`,
        since: beat.failing.since,
      };
    return undefined;
  }

  /** Registers the node, listens for pointers, and starts the beat. */
  async start(): Promise<void> {
    await this.heartbeat.start();
    const notifier = await this.opts.store.notifier();
    this.unsubscribe = notifier.subscribe((p) => this.onPointer(p));
    // pointers sent while the LISTEN connection was down are gone: the sweep finds what they announced for sessions
    // nobody holds, and the sessions this node holds adopt what was announced to it
    this.unReconnect = notifier.onReconnect(() => {
      void this.tick();
      for (const key of this.ownership.ownedKeys()) if (!this.roles.has(key)) this.intake.onInputPointer(key);
    });
    this.stopped = false;
    this.opts.logger.info("cluster: node started", { nodeId: this.nodeId, leaseMs: this.leaseMs });
    this.schedule();
  }

  // QueueCluster (the session queue's side)
  routeStored(sessionKey: string): Promise<void> {
    return this.intake.routeStored(sessionKey);
  }

  sessionIdle(sessionKey: string): void {
    this.intake.sessionIdle(sessionKey);
  }

  /** Start-up: nothing of a live node is touched; dead nodes' runs and unowned queues are taken as on any beat. */
  async recover(): Promise<{ failed: string[]; requeued: string[] }> {
    // in line with the timer's beats (never two at once); its failure fails the start, not the later beats
    const run = this.ticking.then(() => this.beat());
    this.ticking = run.then(
      () => {},
      () => {},
    );
    const { failed, adopted } = await run;
    return { failed, requeued: adopted };
  }

  private onPointer(p: NotifyPointer): void {
    if (p.k === POINTER_INPUT && typeof p.sessionKey === "string") this.intake.onInputPointer(p.sessionKey);
    else if (p.k === POINTER_RELEASED && p.node !== this.nodeId) void this.tick();
    else if (p.k === POINTER_ABORT && typeof p.sessionKey === "string" && this.ownership.owns(p.sessionKey)) {
      this.queue.abort(p.sessionKey, typeof p.runId === "string" ? p.runId : undefined);
    }
  }

  /**
   * chat.abort of a session another node runs: the owner aborts (its runs end with their aborted lifecycle events,
   * which followers on every node see). Nothing to do when this node owns the session (the local abort did it).
   */
  forwardAbort(sessionKey: string, runId?: string): void {
    if (this.ownership.owns(sessionKey)) return;
    notify(this.opts.store.pool, this.opts.store.channel, {
      k: POINTER_ABORT,
      sessionKey,
      ...(runId !== undefined ? { runId } : {}),
    }).catch((err: Error) =>
      this.opts.logger.warn("cluster: forwarding an abort failed", { sessionKey, error: err.message }),
    );
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      void this.tick().finally(() => this.schedule());
    }, this.intervalMs);
  }

  /** One beat's work, never two at once; failures are reported and the next beat tries again. */
  tick(): Promise<void> {
    this.ticking = this.ticking.then(async () => {
      if (this.stopped) return;
      try {
        await this.beat();
      } catch (err) {
        this.opts.logger.warn("cluster: beat failed; retrying", { error: (err as Error)?.message ?? String(err) });
      }
    });
    return this.ticking;
  }

  /**
   * Runs `role` on one node of the deployment at a time: the node that holds the role's lease (a row of the session
   * leases under a key no session has, renewed by the heartbeat like the others). Tried on every beat; a node that
   * dies or drains loses it, and another node gets it on its next beat.
   */
  lead(role: string, handlers: LeaderRole): void {
    this.roles.set(leaderKey(role), handlers);
  }

  /** The leases this node holds now: sessions it runs, and leader roles it has (read by /metrics at scrape time). */
  leasesHeld(): { sessions: number; roles: number } {
    let roles = 0;
    for (const key of this.roles.keys()) if (this.ownership.owns(key)) roles++;
    return { sessions: this.ownership.ownedCount - roles, roles };
  }

  private async claimRoles(): Promise<void> {
    if (this.queue.draining) return;
    for (const [key, role] of this.roles) {
      if (this.ownership.owns(key)) continue;
      const lease = await this.ownership.serial.run(key, async () => {
        const l = await this.ownership.take(key);
        // held for as long as the node has it: never given back as an idle session would be
        if (l) this.ownership.hold(key);
        return l;
      });
      if (!lease) continue;
      this.opts.logger.info("cluster: this node leads", { role: key });
      try {
        await role.gain();
      } catch (err) {
        this.opts.logger.warn("cluster: starting a led role failed", { role: key, error: (err as Error).message });
      }
    }
  }

  private async beat(): Promise<{ failed: string[]; adopted: string[] }> {
    const { store, logger } = this.opts;
    const queue = this.queue;
    // a session lost here: the runs this node had going in it are given up at once, in the session's order, so
    // they are never mistaken for runs of a lease this node might take again before its next beat
    const lost = await this.ownership.reconcile((key) => {
      if (this.roles.has(key)) return;
      void this.ownership.serial
        .run(key, () => disownRunsOfSession(store.pool, this.nodeId, key))
        .catch((err: Error) =>
          logger.warn("cluster: giving up the runs of a lost session failed; the next beat retries", {
            sessionKey: key,
            error: err.message,
          }),
        );
    });
    this.confirmedAt = this.clock.now();
    for (const key of lost) {
      const role = this.roles.get(key);
      if (role) {
        logger.warn("cluster: another node took over a led role", { role: key });
        this.ownership.unhold(key);
        role.lose();
        continue;
      }
      logger.warn("cluster: another node took this session's lease; its local work is stopped", { sessionKey: key });
      queue.abort(key);
    }
    // runs of this node in sessions whose lease it does not hold (it was paused past its lease and is back, or a
    // step above failed): it can write nothing for them, and while it is alive nobody else ends them, so it gives
    // them up to the sessions' lease holders
    const disowned = await disownRunsOfLostSessions(store.pool, this.nodeId);
    if (disowned.length > 0) {
      logger.warn("cluster: runs of sessions this node lost are left to their new lease holders to end", {
        runIds: disowned,
      });
    }
    // leases of sessions whose queue went idle since the last beat (kept for their next message), and any a step
    // took and then failed to use, go back
    await this.intake.releaseIdle();
    const failed = await takeOverLostRuns(store, this.ownership, this.intake, queue, logger, {
      leaseMs: this.leaseMs,
      ...(this.fixedClock ? { clock: this.fixedClock } : {}),
    });
    const adopted = queue.draining
      ? []
      : await sweepOrphanedSessions(
          store.pool,
          this.ownership,
          this.intake,
          this.fixedClock ? { now: this.fixedClock.now() } : {},
        );
    await this.claimRoles();
    return { failed, adopted };
  }

  /**
   * Drain hand-off, after the local queue drained (running turns finished or were aborted and recorded): this node's
   * adopted inputs that never started go back to nobody (keeping their place), its leases and its node row are
   * deleted, and the other nodes are told to sweep now rather than at their next beat.
   */
  async handOff(): Promise<string[]> {
    await this.stopBeating();
    for (const [key, role] of this.roles) if (this.ownership.owns(key)) role.lose();
    await this.ownership.serial.idle();
    await this.flushEvents?.();
    const pool = this.opts.store.pool;
    const sessions = await unadoptQueuedInputs(pool, this.nodeId);
    await this.heartbeat.stop({ leave: true });
    this.ownership.clear();
    await notify(pool, this.opts.store.channel, { k: POINTER_RELEASED, node: this.nodeId });
    this.opts.logger.info("cluster: handed queued work to the other nodes", { sessions: sessions.length });
    return sessions;
  }

  /** Stops the beat without leaving (tests: a node that stops beating, as a kill -9 would). */
  async stopBeating(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.unsubscribe?.();
    this.unReconnect?.();
    await this.ticking;
    await this.heartbeat.stop();
  }
}
