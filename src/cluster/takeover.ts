import type pg from "pg";
import type { Clock } from "../infra/clock.js";
import {
  endLostRuns,
  forgetDeadNodes,
  listSessionsWithLostRuns,
  NODE_LOST_ERROR,
} from "../storage/postgres/node-takeover.js";
import type { ClusterIntake } from "./intake.js";
import type { SessionOwnership } from "./ownership.js";
import type { ClusterLogger, ClusterStore, LocalQueue } from "./types.js";

export const NODE_LOST = "node_lost";

/**
 * On every node, every beat: `running` runs nobody will finish (their node is dead, gave them up, or they have none)
 * are ended by the lease holder of their session. For each such session this node uses the lease it holds, or takes
 * the lease when it is free (a larger token: a dead node, should it wake, is fenced out); a session whose lease
 * another live node holds is that node's to clean, on its own beat. The runs are marked `error` / `node_lost`, their
 * final and lifecycle error event written (numbered after the last stored seq, so `agent.wait` and followers on any
 * node see it), then the session's queued inputs are adopted, the dead node's adoptions among them, and run in order.
 * Returns the runs reported lost.
 */
export async function takeOverLostRuns(
  store: ClusterStore,
  own: SessionOwnership,
  intake: ClusterIntake,
  queue: LocalQueue,
  log: ClusterLogger,
  opts: { leaseMs: number; clock?: Pick<Clock, "now"> },
): Promise<string[]> {
  const pool: pg.Pool = store.pool;
  const at = () => ({
    selfId: own.nodeId,
    leaseMs: opts.leaseMs,
    ...(opts.clock ? { now: opts.clock.now() } : {}),
  });
  const lost: string[] = [];
  for (const sessionKey of await listSessionsWithLostRuns(pool, at())) {
    try {
      await own.serial.run(sessionKey, async () => {
        const held = own.lease(sessionKey);
        const lease = held ?? (await own.leases.acquire(sessionKey));
        if (!lease) return;
        if (!held) own.own(lease);
        const runIds = await endLostRuns(pool, lease, at());
        for (const runId of runIds) {
          const run = await store.getRun(runId);
          if (run) await queue.reportEnded(run, { stopReason: NODE_LOST, error: NODE_LOST_ERROR });
          lost.push(runId);
        }
        await intake.adoptUnder(lease);
        if (runIds.length > 0)
          log.warn("cluster: ended runs nobody will finish (their node is gone)", { sessionKey, runIds });
      });
    } catch (err) {
      // one session's failure (its lease lost meanwhile: FencedError) does not keep the others waiting a beat
      log.warn("cluster: ending a session's lost runs failed; the next beat retries", {
        sessionKey,
        error: (err as Error)?.message ?? String(err),
      });
    }
  }
  await forgetDeadNodes(pool, { leaseMs: opts.leaseMs, ...(opts.clock ? { now: opts.clock.now() } : {}) });
  return lost;
}
