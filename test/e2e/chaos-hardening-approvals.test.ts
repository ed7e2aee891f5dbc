/*
 * Issue 25 items 6 and 7, short (a few seconds each): in-band control over 8 shared sessions, allow-always answers of
 * 3 tenants' approvers. The long runs are test/e2e/soak-hardening-approvals.test.ts (`npm run test:soak`).
 */
import { allowAlwaysTenantsSuite, inBandControlSuite } from "../fixtures/soak/hardening-approvals.js";

inBandControlSuite({ sessions: 8, queuedPerSession: 2, long: false });
allowAlwaysTenantsSuite({ tenants: 3, long: false });
