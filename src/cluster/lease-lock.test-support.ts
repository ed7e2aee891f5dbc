import type { LocksUnderTest } from "../session/lock.conformance.js";
import { migratePostgres } from "../storage/postgres/migrate.js";
import { createPostgresPool } from "../storage/postgres/pool.js";
import { SessionLeases } from "../storage/postgres/session-leases.js";
import { createTestSchema } from "../testing/postgres-schema.js";
import { LeaseSessionLock } from "./lease-lock.js";
import { SessionOwnership } from "./ownership.js";

/**
 * The lease-backed SessionLockPort for the lock conformance suite: two pools on one fresh schema are two nodes (two
 * owners), each with its ownership and no local queue work, timed on the database's clock.
 */
export async function openLeaseLocks(url: string): Promise<LocksUnderTest> {
  const ts = await createTestSchema(url);
  const pools = [createPostgresPool(ts.options), createPostgresPool(ts.options)];
  await migratePostgres(pools[0]);
  const [locks, peer] = pools.map((pool, i) => {
    const own = new SessionOwnership(new SessionLeases(pool, { nodeId: `node-${i}` }), () => false);
    return new LeaseSessionLock(own, { acquireTimeoutMs: 60_000, pollMs: 10 });
  });
  return {
    locks,
    peer,
    async close() {
      for (const p of pools) await p.end();
      await ts.drop();
    },
  };
}
