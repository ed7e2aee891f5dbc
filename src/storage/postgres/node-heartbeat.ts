import { type Clock, systemClock } from "../../infra/clock.js";
import { nowSql, type Queryable } from "./pool.js";
import { DEFAULT_LEASE_MS } from "./session-leases.js";

export interface NodeInfo {
  id: string;
  startedAt: number;
  heartbeatAt: number;
}

export interface NodeHeartbeatOptions {
  nodeId: string;
  /** Default 15000 ms: a node silent this long is dead and its session leases are up for taking. */
  leaseMs?: number;
  /** Default leaseMs / 3, so two beats can be lost (a slow query, a GC pause) before the leases lapse. */
  intervalMs?: number;
  /**
   * Timers, and (when given) the time written: tests pass a ManualClock. Without one, timers are the system's and the
   * times are the database's, the one clock every node agrees on.
   */
  clock?: Clock;
  /** A beat failed (database unreachable): reported, and the next beat tries again. */
  onError?: (err: Error) => void;
  /**
   * A beat found the node's row gone: another node took it for dead (it was silent for a lease: a long pause, a
   * partition) and took over its sessions. The beat registered it again; reported, since its runs then were lost.
   */
  onRejoined?: () => void;
  /**
   * The id is the operator's (`cluster.nodeId`), so it outlives the process: a live node with this id refuses the
   * start (two processes with one id would share leases), and what a dead earlier process of this id left (its leases,
   * its running and adopted runs) is given up before it registers, to be ended and adopted as any dead node's are.
   */
  fixedId?: boolean;
}

/** Another node's settings do not match this one's, or its id is taken: the node must not join. */
export class NodeJoinError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NodeJoinError";
  }
}

/**
 * This node's liveness row. Each beat, in one statement, stamps `nodes.heartbeat_at` and extends the node's session
 * leases, so a node that is alive enough to beat keeps its sessions and one that is not loses them together.
 */
export class NodeHeartbeat {
  readonly nodeId: string;
  readonly leaseMs: number;
  readonly intervalMs: number;
  private readonly timers: Clock;
  private readonly fixedClock?: Clock;
  private timer: unknown;
  private inFlight: Promise<void> = Promise.resolve();
  private stopped = true;
  /** when a beat last went through, and the error of the beats failing since (this node's timer clock) */
  private lastOkAt = Number.NEGATIVE_INFINITY;
  private failing: { error: string; since: number } | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly opts: NodeHeartbeatOptions,
  ) {
    this.nodeId = opts.nodeId;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.intervalMs = opts.intervalMs ?? Math.max(1, Math.floor(this.leaseMs / 3));
    if (this.intervalMs >= this.leaseMs) {
      throw new Error(
        `heartbeat interval ${this.intervalMs} ms must be shorter than the lease (${this.leaseMs} ms), or leases lapse between beats`,
      );
    }
    this.timers = opts.clock ?? systemClock;
    this.fixedClock = opts.clock;
  }

  private now(): number | null {
    return this.fixedClock ? this.fixedClock.now() : null;
  }

  /**
   * Registers the node (a restarted node with the same id starts afresh) and starts beating. Refused (NodeJoinError)
   * when a live node uses another lease length: each node judges the others dead by its own, so nodes that disagree
   * would take each other's sessions from live owners.
   */
  async start(): Promise<void> {
    await this.checkJoin();
    if (this.opts.fixedId) {
      await this.db.query(
        `WITH gone AS (DELETE FROM session_leases WHERE node_id = $1)
         UPDATE runs SET node_id = NULL WHERE node_id = $1 AND status IN ('running', 'queued')`,
        [this.nodeId],
      );
    }
    await this.db.query(
      `INSERT INTO nodes (id, started_at, heartbeat_at, lease_ms) SELECT $1, t.now, t.now, $3
       FROM (SELECT ${nowSql(2)} AS now) t
       ON CONFLICT (id) DO UPDATE SET started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at,
         lease_ms = EXCLUDED.lease_ms`,
      [this.nodeId, this.now(), this.leaseMs],
    );
    this.lastOkAt = this.timers.now();
    this.stopped = false;
    this.schedule();
  }

  /** The live nodes (silent for less than their own lease) must use this node's lease length; a fixed id must be free. */
  private async checkJoin(): Promise<void> {
    const { rows } = await this.db.query<{ id: string; lease_ms: number | null; silent_ms: number }>(
      `SELECT id, lease_ms, (${nowSql(1)} - heartbeat_at)::bigint AS silent_ms FROM nodes
       WHERE heartbeat_at >= ${nowSql(1)} - COALESCE(lease_ms, $2) ORDER BY id`,
      [this.now(), this.leaseMs],
    );
    const other = rows.filter((r) => r.lease_ms !== null && Number(r.lease_ms) !== this.leaseMs);
    if (other.length > 0) {
      const theirs = [...new Set(other.map((r) => Number(r.lease_ms)))].join(" / ");
      throw new NodeJoinError(
        `storage.postgres.leaseMs is ${this.leaseMs} on this node but ${theirs} on the live node${other.length === 1 ? "" : "s"} ${other.map((r) => r.id).join(", ")}: every node of a deployment must use the same value (each judges the others dead by its own); this node does not join`,
      );
    }
    const twin = this.opts.fixedId ? rows.find((r) => r.id === this.nodeId) : undefined;
    if (twin) {
      throw new NodeJoinError(
        `cluster.nodeId "${this.nodeId}" is in use by a live node (its last heartbeat ${Number(twin.silent_ms)} ms ago): give each node its own id; if that was this node before a crash, it can start again once storage.postgres.leaseMs (${this.leaseMs} ms) has passed`,
      );
    }
  }

  /**
   * Whether the beat goes through: `failing` while the last beat failed (the store is unreachable); `lapsed` once no
   * beat went through for a whole lease, so this node's leases have expired and other nodes may take its sessions.
   */
  state(): { lastOkAt: number; failing?: { error: string; since: number }; lapsed: boolean } {
    const lapsed = this.timers.now() - this.lastOkAt > this.leaseMs;
    return { lastOkAt: this.lastOkAt, ...(this.failing ? { failing: { ...this.failing } } : {}), lapsed };
  }

  /**
   * One beat: the node's row and every lease it holds, in one statement. The row is written again when it is gone: a
   * node another node took for dead (and whose row the takeover removed) that is in fact alive must be seen again, or
   * its later death would go unnoticed: its runs would stay `running` and their sessions' queues would never move.
   * True when the row had to be written again.
   */
  async beat(): Promise<boolean> {
    const { rows } = await this.db.query<{ rejoined: boolean }>(
      `WITH t AS (SELECT ${nowSql(2)} AS now),
            leases AS (UPDATE session_leases SET expires_at = (SELECT now FROM t) + $3 WHERE node_id = $1)
       INSERT INTO nodes (id, started_at, heartbeat_at, lease_ms) SELECT $1, t.now, t.now, $3 FROM t
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at
       RETURNING (xmax = 0) AS rejoined`,
      [this.nodeId, this.now(), this.leaseMs],
    );
    return rows[0]?.rejoined === true;
  }

  /** Resolves when the beat a timer started (if any) has finished; for tests driving a ManualClock. */
  settled(): Promise<void> {
    return this.inFlight;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.timers.setTimeout(() => {
      this.inFlight = this.beat()
        .then((rejoined) => {
          this.lastOkAt = this.timers.now();
          this.failing = undefined;
          if (rejoined) this.opts.onRejoined?.();
        })
        .catch((err: Error) => {
          this.failing ??= { error: err.message, since: this.timers.now() };
          this.failing.error = err.message;
          this.opts.onError?.(err);
        })
        .finally(() => this.schedule());
    }, this.intervalMs);
  }

  /**
   * Stops beating. `leave: true` (a clean shutdown after draining) also deletes the node's row and gives its leases
   * back at once, so the other nodes need not wait for them to expire.
   */
  async stop(opts: { leave?: boolean } = {}): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    await this.inFlight;
    if (opts.leave) {
      await this.db.query(
        "WITH gone AS (DELETE FROM session_leases WHERE node_id = $1) DELETE FROM nodes WHERE id = $1",
        [this.nodeId],
      );
    }
  }
}

/** Nodes whose last beat is older than the lease: dead, or paused long enough that their sessions may be taken. */
export async function listDeadNodes(
  db: Queryable,
  opts: { leaseMs?: number; clock?: Pick<Clock, "now"> } = {},
): Promise<NodeInfo[]> {
  const { rows } = await db.query<{ id: string; started_at: number; heartbeat_at: number }>(
    `SELECT id, started_at, heartbeat_at FROM nodes WHERE heartbeat_at < ${nowSql(1)} - $2 ORDER BY heartbeat_at`,
    [opts.clock ? opts.clock.now() : null, opts.leaseMs ?? DEFAULT_LEASE_MS],
  );
  return rows.map((r) => ({ id: r.id, startedAt: r.started_at, heartbeatAt: r.heartbeat_at }));
}
