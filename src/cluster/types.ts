import type pg from "pg";
import type { AdoptedRun } from "../queue/types.js";
import type { PgNotifier } from "../storage/postgres/notifier.js";
import type { RunRecord } from "../storage/types.js";

/**
 * What the cluster layer needs of the Postgres store (storage/postgres/store.ts): its pool, the deployment's NOTIFY
 * channel and its one shared LISTEN connection, and the fence hook that makes the store's session, transcript and
 * run writes for a session carry this node's lease token.
 */
export interface ClusterStore {
  readonly kind: string;
  readonly pool: pg.Pool;
  readonly channel: string;
  notifier(): Promise<PgNotifier>;
  /** `fn(sessionKey)`: the token the store's writes for the session must still hold, or undefined (unfenced). */
  setFence?(fn: (sessionKey: string) => number | undefined): void;
  /** `nodeId`: the node the store's `running` writes put a run on (`runs.node_id`), which adopts it with them. */
  setRunNode?(nodeId: string): void;
  getRun(runId: string): Promise<RunRecord | undefined>;
}

/** The node's in-memory session queue, as the cluster layer drives it (queue/session-queue.ts). */
export interface LocalQueue {
  adopt(runs: readonly AdoptedRun[]): number;
  /** Whether the run's turn started here (it is its session's running turn): its `running` write adopts it. */
  launched(runId: string): boolean;
  hasWork(sessionKey: string): boolean;
  readonly draining: boolean;
  /** Ends a run another (dead) node left running: record, lifecycle error event numbered after the stored ones. */
  reportEnded(run: RunRecord, ended: { stopReason: string; error: string }): Promise<void>;
  /**
   * Aborts the session's local work, or one run of it: a lease taken by another node (the writes it would make are
   * fenced anyway), or a chat.abort sent to another node.
   */
  abort(sessionKey: string, runId?: string): unknown;
}

/** NOTIFY pointers of the cluster layer (`k` tells them apart from the event bus's `"ev"`). */
export const POINTER_INPUT = "in"; // {k, sessionKey}: the session has a stored input its owner should adopt
export const POINTER_RELEASED = "rel"; // {k, node}: a node gave its sessions back (drain): sweep now
export const POINTER_ABORT = "ab"; // {k, sessionKey, runId?}: chat.abort sent to another node: the owner aborts

export interface ClusterLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}
