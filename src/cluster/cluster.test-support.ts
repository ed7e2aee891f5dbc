import type pg from "pg";
import type { AdoptedRun } from "../queue/types.js";
import { notifyChannel, PgNotifier } from "../storage/postgres/notifier.js";
import { createPostgresPool, type PostgresOptions } from "../storage/postgres/pool.js";
import type { PostgresStore } from "../storage/postgres/store.js";
import type { RunRecord, RunStatus } from "../storage/types.js";
import type { ManualClock } from "../testing/manual-clock.js";
import { ClusterNode } from "./node.js";
import type { ClusterStore, LocalQueue } from "./types.js";

/**
 * A node of the cluster layer for integration tests on a real Postgres: its own pool and LISTEN connection (two
 * nodes never share a connection, as two processes would not), and a scripted local queue that records what it is
 * given and runs it only when the test says so.
 */
export class ScriptedQueue implements LocalQueue {
  readonly adopted: AdoptedRun[] = [];
  readonly pending = new Map<string, string[]>();
  readonly ended: Array<{ runId: string; stopReason: string }> = [];
  readonly aborted: string[] = [];
  draining = false;
  node?: ClusterNode;

  constructor(private readonly pool: pg.Pool) {}

  adopt(runs: readonly AdoptedRun[]): number {
    for (const r of runs) {
      this.adopted.push(r);
      const list = this.pending.get(r.sessionKey) ?? [];
      list.push(r.runId);
      this.pending.set(r.sessionKey, list);
    }
    return runs.length;
  }

  hasWork(sessionKey: string): boolean {
    return (this.pending.get(sessionKey)?.length ?? 0) > 0;
  }

  /**
   * With `startsAtOnce`, the first input of an idle session counts as started on adoption (as the real queue's turn
   * does); else nothing starts on adoption and the test starts inputs itself (`start`).
   */
  startsAtOnce = false;

  launched(runId: string): boolean {
    const input = this.adopted.find((r) => r.runId === runId);
    return this.startsAtOnce && input !== undefined && this.pending.get(input.sessionKey)?.[0] === runId;
  }

  async reportEnded(run: RunRecord, ended: { stopReason: string; error: string }): Promise<void> {
    this.ended.push({ runId: run.runId, stopReason: ended.stopReason });
  }

  abort(sessionKey: string, runId?: string): void {
    this.aborted.push(runId ? `${sessionKey} ${runId}` : sessionKey);
  }

  /** Starts the session's next adopted input (status running), as a turn's start does. */
  async start(sessionKey: string): Promise<string | undefined> {
    const runId = this.pending.get(sessionKey)?.[0];
    if (runId) await this.pool.query("UPDATE runs SET status = 'running' WHERE run_id = $1", [runId]);
    return runId;
  }

  /** Ends the session's running input ok; with nothing left the session is idle (the queue tells the node). */
  async finish(sessionKey: string): Promise<void> {
    const list = this.pending.get(sessionKey) ?? [];
    const runId = list.shift();
    if (runId) await this.pool.query("UPDATE runs SET status = 'ok' WHERE run_id = $1", [runId]);
    if (list.length === 0) {
      this.pending.delete(sessionKey);
      this.node?.sessionIdle(sessionKey);
    }
  }

  adoptedIds(sessionKey?: string): string[] {
    return this.adopted.filter((r) => !sessionKey || r.sessionKey === sessionKey).map((r) => r.runId);
  }
}

export interface TestNode {
  node: ClusterNode;
  queue: ScriptedQueue;
  pool: pg.Pool;
  notifier: PgNotifier;
  /** stores an input as any node's intake does (queued, adopted by nobody), then routes it from this node */
  accept(sessionKey: string, runId: string): Promise<void>;
  close(): Promise<void>;
}

export async function openTestNode(
  options: PostgresOptions,
  opts: { nodeId: string; leaseMs: number; clock: ManualClock; store?: PostgresStore },
): Promise<TestNode> {
  const pool = opts.store?.pool ?? createPostgresPool(options);
  const channel = notifyChannel(options.schema);
  const notifier = opts.store
    ? await opts.store.notifier()
    : new PgNotifier({ connection: options, channel, reconnect: { baseMs: 20, maxMs: 200 } });
  if (!opts.store) await notifier.start();
  const store: ClusterStore = opts.store ?? {
    kind: "postgres",
    pool,
    channel,
    notifier: async () => notifier,
    getRun: async (runId) => {
      const { rows } = await pool.query<{
        run_id: string;
        session_key: string;
        status: RunStatus;
        accepted_at: number;
      }>("SELECT run_id, session_key, status, accepted_at FROM runs WHERE run_id = $1", [runId]);
      const r = rows[0];
      return r
        ? { runId: r.run_id, sessionKey: r.session_key, status: r.status, acceptedAt: r.accepted_at, params: {} }
        : undefined;
    },
  };
  const queue = new ScriptedQueue(pool);
  const node = new ClusterNode({
    store,
    logger: { info: () => {}, warn: () => {} },
    leaseMs: opts.leaseMs,
    nodeId: opts.nodeId,
    acquireTimeoutMs: 1000,
    clock: opts.clock,
  });
  node.attach(queue);
  queue.node = node;
  await node.start();
  return {
    node,
    queue,
    pool,
    notifier,
    async accept(sessionKey, runId) {
      await pool.query(
        `INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ($1, $2, 'queued', $3, $4)`,
        [
          runId,
          sessionKey,
          opts.clock.now(),
          JSON.stringify({ message: runId, idempotencyKey: runId, agentId: "main" }),
        ],
      );
      await node.routeStored(sessionKey);
    },
    async close() {
      await node.stopBeating().catch(() => {});
      if (opts.store) return opts.store.close();
      await notifier.stop();
      await pool.end();
    },
  };
}

/** Polls `check` (a real wait: NOTIFY crosses connections) until it holds; bounded, so a lost pointer fails the test. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
