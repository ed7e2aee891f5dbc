import type pg from "pg";
import type { Clock } from "../infra/clock.js";
import { listDeadNodes } from "../storage/postgres/node-heartbeat.js";
import { NODE_LOST_ERROR, takeOverDeadNode } from "../storage/postgres/node-takeover.js";
import type { ClusterIntake } from "./intake.js";
import type { SessionOwnership } from "./ownership.js";
import type { ClusterLogger, ClusterStore, LocalQueue } from "./types.js";

export const NODE_LOST = "node_lost";

/**
 * On every node, every beat: nodes silent for longer than the lease are dead. For each session a dead node was
 * running, this node takes the lease (a larger token: the dead node, should it wake, is fenced out), marks the runs
 * it had going `error` / `node_lost`, writes their final and their lifecycle error event (numbered after the last
 * stored seq, so `agent.wait` and followers on any node see it), then adopts the session's queued inputs, the dead
 * node's adoptions among them, and runs them in order. Several watchers racing: the lease decides, one wins per
 * session. Returns the runs reported lost.
 */
export async function takeOverDeadNodes(
  store: ClusterStore,
  own: SessionOwnership,
  intake: ClusterIntake,
  queue: LocalQueue,
  log: ClusterLogger,
  opts: { leaseMs: number; clock?: Pick<Clock, "now"> },
): Promise<string[]> {
  const pool: pg.Pool = store.pool;
  const dead = await listDeadNodes(pool, { leaseMs: opts.leaseMs, ...(opts.clock ? { clock: opts.clock } : {}) });
  const lost: string[] = [];
  for (const node of dead) {
    if (node.id === own.nodeId) continue;
    const taken = await takeOverDeadNode(pool, own.leases, node.id, opts.clock ? { now: opts.clock.now() } : {});
    for (const t of taken) {
      await own.serial.run(t.sessionKey, async () => {
        own.own(t.lease);
        for (const runId of t.lostRunIds) {
          const run = await store.getRun(runId);
          if (run) await queue.reportEnded(run, { stopReason: NODE_LOST, error: NODE_LOST_ERROR });
          lost.push(runId);
        }
        await intake.adoptUnder(t.lease);
      });
      log.warn("cluster: took over a session of a dead node", {
        deadNode: node.id,
        sessionKey: t.sessionKey,
        lostRuns: t.lostRunIds.length,
      });
    }
  }
  return lost;
}
