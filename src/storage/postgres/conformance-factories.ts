import { openTwoNodeBus } from "../../events/pg-bus.test-support.js";
import type { PostgresFactories } from "../../testing/postgres-hook.test-support.js";

/**
 * The Postgres backend's entries for the port conformance suites (postgres.conformance.test.ts). One line per port;
 * each factory gets the server URL and builds its subject on a fresh schema it drops again.
 */
export const conformanceFactories: PostgresFactories = {
  bus: openTwoNodeBus,
};
