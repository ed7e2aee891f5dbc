/*
 * Soak (only in `npm run test:soak`): the seeded crash matrix, long.
 *   LOOPGATE_SOAK_KILLS           kill -9s of the gateway (default 30)
 *   LOOPGATE_SOAK_CRASH_SESSIONS  sessions the inputs are spread over (default 3)
 *   LOOPGATE_SOAK_SEED            the PRNG seed (default: a fresh one, printed)
 */
import { intKnob } from "../fixtures/soak/knobs.js";
import { crashMatrixSuite } from "../fixtures/soak/suites.js";

crashMatrixSuite({
  kills: intKnob("LOOPGATE_SOAK_KILLS", 30),
  sessions: intKnob("LOOPGATE_SOAK_CRASH_SESSIONS", 3),
  long: true,
});
