/*
 * The protocol fuzz, short: 2,000 malformed frames after connect and 100 before, from fast-check. The long run is
 * test/e2e/soak-protocol-fuzz.test.ts (`npm run test:soak`). A failure prints its seed: replay it with
 * LOOPGATE_SOAK_SEED=<seed>.
 */
import { protocolFuzzSuite } from "../fixtures/soak/suites.js";

protocolFuzzSuite({ frames: 2000, preAuthFrames: 100, long: false });
