/*
 * Soak (only in `npm run test:soak`): the protocol fuzz, long.
 *   LOOPGATE_SOAK_FRAMES          malformed frames on one authenticated connection (default 100000)
 *   LOOPGATE_SOAK_PREAUTH_FRAMES  malformed first frames, one connection each (default 2000)
 *   LOOPGATE_SOAK_SEED            the fast-check seed (default: a fresh one, printed)
 */
import { intKnob } from "../fixtures/soak/knobs.js";
import { protocolFuzzSuite } from "../fixtures/soak/suites.js";

protocolFuzzSuite({
  frames: intKnob("LOOPGATE_SOAK_FRAMES", 100_000),
  preAuthFrames: intKnob("LOOPGATE_SOAK_PREAUTH_FRAMES", 2000),
  long: true,
});
