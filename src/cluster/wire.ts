import type { LoopgateConfig } from "../config/schema.js";
import type { Logger } from "../infra/logger.js";
import type { Store } from "../storage/types.js";
import type { ClusterNode } from "./node.js";
import type { ClusterStore } from "./types.js";

/**
 * The cluster node of a gateway whose store is Postgres, else undefined (SQLite: one node, nothing changes). Built
 * before the runtime (which takes its lease-backed session lock), bound to the queue by `AgentService.attachCluster`,
 * then started before the gateway recovers or serves.
 */
export async function clusterNodeFor(
  store: Store,
  config: LoopgateConfig,
  logger: Logger,
): Promise<ClusterNode | undefined> {
  if (store.kind !== "postgres") return undefined;
  // loaded only here: a SQLite gateway never loads the cluster layer nor the pg driver it brings
  const { ClusterNode } = await import("./node.js");
  const pg = store as unknown as Partial<ClusterStore>;
  if (!pg.pool || !pg.channel || typeof pg.notifier !== "function") {
    throw new Error("storage.backend postgres: the store does not expose its pool, channel and notifier");
  }
  return new ClusterNode({
    store: pg as ClusterStore,
    logger,
    leaseMs: config.storage.postgres.leaseMs,
    acquireTimeoutMs: config.session.writeLock.acquireTimeoutMs,
  });
}
