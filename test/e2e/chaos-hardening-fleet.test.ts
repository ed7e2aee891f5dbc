/*
 * Issue 25's fleet items, short (a few seconds each): randomized node pauses and deaths in a Postgres fleet, and
 * storage migrate of a crashed SQLite state with control characters in keys and labels. The long run is
 * test/e2e/soak-hardening-fleet.test.ts (`npm run test:soak`).
 */
import { crashedMigrateSuite, fleetChaosSuite } from "../fixtures/soak/hardening-fleet.js";

fleetChaosSuite({ inputs: 60, nodes: 3, sessions: 6, settleBeats: 200, maxMs: 20_000, long: false });

crashedMigrateSuite({ sessions: 200, long: false });
