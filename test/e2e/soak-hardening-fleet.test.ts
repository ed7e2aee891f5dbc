/*
 * Soak (only in `npm run test:soak`): issue 25's fleet items, long.
 *   LOOPGATE_SOAK_FLEET_INPUTS    inputs accepted while nodes pause and die at random (default 600)
 *   LOOPGATE_SOAK_FLEET_NODES     nodes up at a time (default 4)
 *   LOOPGATE_SOAK_FLEET_SESSIONS  sessions the inputs go to (default 24)
 *   LOOPGATE_SOAK_FLEET_MS        wall-clock bound of the chaos phase, ms (default 300000)
 *   LOOPGATE_SOAK_MIGRATE_SESSIONS  sessions of the crashed SQLite state storage migrate copies (default 20000)
 */
import { crashedMigrateSuite, fleetChaosSuite } from "../fixtures/soak/hardening-fleet.js";
import { intKnob } from "../fixtures/soak/knobs.js";

fleetChaosSuite({
  inputs: intKnob("LOOPGATE_SOAK_FLEET_INPUTS", 600),
  nodes: intKnob("LOOPGATE_SOAK_FLEET_NODES", 4),
  sessions: intKnob("LOOPGATE_SOAK_FLEET_SESSIONS", 24),
  settleBeats: 2000,
  maxMs: intKnob("LOOPGATE_SOAK_FLEET_MS", 300_000),
  long: true,
});

crashedMigrateSuite({ sessions: intKnob("LOOPGATE_SOAK_MIGRATE_SESSIONS", 20_000), long: true });
