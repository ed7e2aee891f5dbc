import { ExecApprovalError } from "../../agent/exec-approvals.js";
import type { ExecApprovalListResult } from "../../protocol/exec-approvals.js";
import { ErrorCodes } from "../../protocol/frames.js";
import { execApprovalListParamsSchema, execApprovalResolveParamsSchema } from "../../protocol/params.js";
import { normalizeSessionKey } from "../../session/keys.js";
import { defineMethod } from "../context.js";
import { GatewayError } from "../errors.js";

/** The exec commands waiting for an answer, in the sessions this client may approve. */
export const execApprovalListMethod = defineMethod({
  name: "exec.approval.list",
  scope: "approvals",
  params: execApprovalListParamsSchema,
  handle({ params, conn, gw, reply }) {
    const only =
      params.sessionKey !== undefined
        ? normalizeSessionKey(params.sessionKey, params.agentId ?? gw.service.rt.defaultAgentId).key
        : undefined;
    const approvals = gw.service.rt.execApprovals
      .pending()
      .filter((a) => (only === undefined || a.sessionKey === only) && conn.access.canApprove(a.sessionKey));
    const result: ExecApprovalListResult = { approvals };
    reply.ok(result);
  },
});

/**
 * An operator's answer: allow-once, allow-always or deny. allow-always is remembered for this agent and command
 * inside the sessions the approver's token grants (an approver confined to one tenant's sessions widens no other
 * tenant's exec policy).
 */
export const execApprovalResolveMethod = defineMethod({
  name: "exec.approval.resolve",
  scope: "approvals",
  params: execApprovalResolveParamsSchema,
  handle({ params, conn, gw, reply }) {
    const approvals = gw.service.rt.execApprovals;
    const pending = approvals.get(params.id);
    if (pending) conn.access.requireApprove(pending.sessionKey);
    try {
      reply.ok(
        approvals.resolve(params.id, params.decision, { sessions: conn.access.grantedSessions, by: conn.actor }),
      );
    } catch (err) {
      if (!(err instanceof ExecApprovalError)) throw err;
      throw new GatewayError({
        code: ErrorCodes.notFound,
        message: `params.id: ${err.message}`,
        details: { reason: err.code },
      });
    }
  },
});
