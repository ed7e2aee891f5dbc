/*
 * Soak (only in `npm run test:soak`): issue 25 items 6 and 7, large.
 *   LOOPGATE_SOAK_INBAND_SESSIONS  shared sessions stopped or interrupted at once (default 200)
 *   LOOPGATE_SOAK_INBAND_QUEUED    client A's queued messages per session (default 5)
 *   LOOPGATE_SOAK_TENANTS          tenants, each with its own confined approver (default 100)
 */
import { allowAlwaysTenantsSuite, inBandControlSuite } from "../fixtures/soak/hardening-approvals.js";
import { intKnob } from "../fixtures/soak/knobs.js";

inBandControlSuite({
  sessions: intKnob("LOOPGATE_SOAK_INBAND_SESSIONS", 200),
  queuedPerSession: intKnob("LOOPGATE_SOAK_INBAND_QUEUED", 5),
  long: true,
});
allowAlwaysTenantsSuite({ tenants: intKnob("LOOPGATE_SOAK_TENANTS", 100), long: true });
