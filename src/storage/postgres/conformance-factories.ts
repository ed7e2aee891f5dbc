import { openLeaseLocks } from "../../cluster/lease-lock.test-support.js";
import type { BusUnderTest } from "../../events/bus.conformance.js";
import { openTwoNodeBus } from "../../events/pg-bus.test-support.js";
import type { LocksUnderTest } from "../../session/lock.conformance.js";
import { createTestSchema } from "../../testing/postgres-schema.js";
import type { StoreUnderTest } from "../store.conformance.js";
import { openPostgresStore, type PostgresStore } from "./store.js";

/**
 * The Postgres backend's entries for the port conformance suites (postgres.conformance.test.ts). One line per port;
 * each factory gets the server URL and builds its subject on a fresh schema it drops again.
 */
export interface PostgresFactories {
  store: (url: string) => Promise<StoreUnderTest>;
  /** two pools on one database are two owners: the lock suite's two-owner cases run */
  locks: (url: string) => Promise<LocksUnderTest>;
  /** two buses on one database are two nodes: the bus suite's cross-node cases run */
  bus: (url: string) => Promise<BusUnderTest>;
}

export const conformanceFactories: PostgresFactories = {
  store: openStoreUnderTest,
  locks: openLeaseLocks,
  bus: openTwoNodeBus,
};

/** A store on a fresh schema; "another store" is a second pool on that schema, as another node would open it. */
async function openStoreUnderTest(url: string): Promise<StoreUnderTest> {
  const ts = await createTestSchema(url);
  const opened: PostgresStore[] = [];
  const openOne = async () => {
    const s = await openPostgresStore({ ...ts.options, poolMax: 4 });
    opened.push(s);
    return s;
  };
  return {
    store: await openOne(),
    openAnother: openOne,
    cleanup: async () => {
      for (const s of opened) await s.close();
      await ts.drop();
    },
  };
}
