import { describe } from "vitest";
import { sessionLockConformance } from "../session/lock.conformance.js";
import { testPostgresUrl } from "../testing/postgres-schema.js";
import { openLeaseLocks } from "./lease-lock.test-support.js";

// Skipped without LOOPGATE_TEST_POSTGRES_URL: the lease lock needs a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("lease-backed session lock", () => {
  sessionLockConformance("postgres lease", () => openLeaseLocks(testPostgresUrl as string), { hasPeer: true });
});
