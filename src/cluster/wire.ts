import type { LoopgateConfig } from "../config/schema.js";
import type { Logger } from "../infra/logger.js";
import { ClusterNode } from "./node.js";
import type { ClusterStore } from "./types.js";

/**
 * The cluster node of a gateway on Postgres (src/node/ builds it only for that backend; SQLite is one node and gets
 * none). Built before the runtime (which takes its lease-backed session lock), bound to the queue by
 * `AgentService.attachCluster`, then started before the gateway recovers or serves.
 */
export function clusterNodeFor(store: ClusterStore, config: LoopgateConfig, logger: Logger): ClusterNode {
  const nodeId = config.cluster.nodeId;
  return new ClusterNode({
    store,
    logger,
    ...(nodeId !== undefined ? { nodeId, fixedId: true } : {}),
    leaseMs: config.storage.postgres.leaseMs,
    acquireTimeoutMs: config.session.writeLock.acquireTimeoutMs,
  });
}
