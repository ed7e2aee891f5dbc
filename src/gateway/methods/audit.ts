import { auditListParamsSchema } from "../../protocol/params.js";
import type { AuditListResult } from "../../protocol/payloads.js";
import { readAuditPage } from "../audit-page.js";
import { defineMethod } from "../context.js";

/** rows per page when the caller gives no limit */
const DEFAULT_AUDIT_LIMIT = 100;

/**
 * `audit.list` (SPEC 20/21): the audit ledger, newest first, for operator.read inside the token's sessions. Rows still
 * in the ledger's write queue are written first, so a run that just ended is listed.
 */
export const auditListMethod = defineMethod({
  name: "audit.list",
  scope: "read",
  params: auditListParamsSchema,
  async handle({ params, conn, gw, reply }) {
    // the session as every other method names it: "support-42" is agent:<default agent>:support-42
    const sessionKey = conn.access.readFilter(params.sessionKey, gw.service.rt.defaultAgentId);
    await gw.audit.flush();
    const { limit, cursor, ...query } = params;
    const page = await readAuditPage(gw.service.sessions, {
      query: { ...query, sessionKey },
      limit: limit ?? DEFAULT_AUDIT_LIMIT,
      cursor,
      canSee: (key) => conn.access.canSeeSession(key),
    });
    const result: AuditListResult = { ...page, dropped: gw.audit.state().dropped };
    reply.ok(result);
  },
});
