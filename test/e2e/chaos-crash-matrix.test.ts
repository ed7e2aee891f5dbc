/*
 * The crash matrix, short: 3 seeded kill -9s of a real gateway process across active, steered, collected and
 * queued input. The long run is test/e2e/soak-crash-matrix.test.ts (`npm run test:soak`). A failure prints its
 * seed: replay it with LOOPGATE_SOAK_SEED=<seed>.
 */
import { crashMatrixSuite } from "../fixtures/soak/suites.js";

crashMatrixSuite({ kills: 3, sessions: 2, long: false });
