/*
 * Issue 25's edge items, short (seconds): pre-auth starvation with every slot held by idle sockets reopened on
 * close (20 connects of a local client), and 200 requests of a DNS-rebound page. The long runs are
 * test/e2e/soak-hardening-edge.test.ts (`npm run test:soak`).
 */
import { preAuthStarvationSuite, rebindingSuite } from "../fixtures/soak/hardening-edge.js";

preAuthStarvationSuite({ connects: 20, long: false });
rebindingSuite({ requests: 200, long: false });
