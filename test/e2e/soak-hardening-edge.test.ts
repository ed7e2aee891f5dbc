/*
 * Soak (only in `npm run test:soak`): issue 25's edge items, long.
 *   LOOPGATE_SOAK_PREAUTH_CONNECTS  connects of a local client while idle sockets hold every pre-auth slot (default 2000)
 *   LOOPGATE_SOAK_REBIND_REQUESTS   requests of a DNS-rebound page: HTTP, upgrades, browser connects (default 20000)
 */

import { preAuthStarvationSuite, rebindingSuite } from "../fixtures/soak/hardening-edge.js";
import { intKnob } from "../fixtures/soak/knobs.js";

preAuthStarvationSuite({ connects: intKnob("LOOPGATE_SOAK_PREAUTH_CONNECTS", 2000), long: true });
rebindingSuite({ requests: intKnob("LOOPGATE_SOAK_REBIND_REQUESTS", 20_000), long: true });
