import { describe } from "vitest";
import { eventBusConformance } from "../events/bus.conformance.js";
import { sessionLockConformance } from "../session/lock.conformance.js";
import { testPostgresUrl } from "../testing/postgres-schema.js";
import { conformanceFactories as pg } from "./postgres/conformance-factories.js";
import { storeConformance } from "./store.conformance.js";

// The Postgres entries of the three port suites, against the server at LOOPGATE_TEST_POSTGRES_URL.
const url = testPostgresUrl ?? "";

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these suites need a real PostgreSQL server (.ci/run sets it), so a
// plain `npm test` on a machine without one skips them; testing/postgres-schema.ts says so in one line.
describe.skipIf(!testPostgresUrl)("port conformance on Postgres", () => {
  storeConformance("postgres", () => pg.store(url));
  sessionLockConformance("postgres", () => pg.locks(url), { hasPeer: true });
  eventBusConformance("postgres", () => pg.bus(url), { separateNodes: true });
});
