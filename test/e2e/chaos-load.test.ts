/*
 * Load, short: 40 sessions × 3 turns at once over 4 clients, with event-integrity checks. The long run is
 * test/e2e/soak-load.test.ts (`npm run test:soak`).
 */
import { loadSuite } from "../fixtures/soak/suites.js";

loadSuite({ sessions: 40, turns: 3, clients: 4, long: false });
