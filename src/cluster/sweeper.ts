import type pg from "pg";
import { listOrphanedSessions } from "../storage/postgres/queue-adopt.js";
import type { ClusterIntake } from "./intake.js";
import type { SessionOwnership } from "./ownership.js";

/** Sessions one sweep takes at most: a node coming up beside a big backlog takes it in bounded steps, beat by beat. */
export const SWEEP_LIMIT = 32;

/**
 * On every node, every beat (bounded): sessions with queued inputs and no live lease are adopted by whoever gets
 * their lease first. It covers a lost NOTIFY, inputs accepted while the owner was giving the session back, a drained
 * node's hand-off, and the queue of a dead node's sessions once their leases have expired. Returns the sessions this
 * node took.
 */
export async function sweepOrphanedSessions(
  pool: pg.Pool,
  own: SessionOwnership,
  intake: ClusterIntake,
  opts: { limit?: number; now?: number } = {},
): Promise<string[]> {
  const keys = await listOrphanedSessions(pool, {
    limit: opts.limit ?? SWEEP_LIMIT,
    ...(opts.now !== undefined ? { now: opts.now } : {}),
  });
  const taken: string[] = [];
  for (const key of keys) {
    if (await own.serial.run(key, () => intake.claimHere(key))) taken.push(key);
  }
  return taken;
}
