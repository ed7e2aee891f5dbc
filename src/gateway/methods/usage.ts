import { BudgetApprovalError } from "../../limits/budget-approvals.js";
import { budgetApprovalListParams, budgetApprovalResolveParams } from "../../protocol/budget-approvals.js";
import { ErrorCodes } from "../../protocol/frames.js";
import { usageSummaryParams } from "../../protocol/usage.js";
import { defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";

const DAY_MS = 24 * 60 * 60 * 1000;

function spendOf(gw: GatewayContext) {
  const spend = gw.service.rt.spend;
  if (!spend) throw new GatewayError({ code: ErrorCodes.unavailable, message: "spend control is not running here" });
  return spend;
}

/** The cost ledger per day and group, inside the sessions the caller's token grants (SPEC 25). */
export const usageSummaryMethod = defineMethod({
  name: "usage.summary",
  scope: "read",
  params: usageSummaryParams,
  async handle({ params, conn, gw, reply }) {
    // SPEC 21: spend is a read path (operator.read), inside the sessions the token grants
    const sessionKey = conn.access.readFilter(params.sessionKey, gw.service.rt.defaultAgentId);
    const spend = spendOf(gw);
    const until = params.until ?? gw.now();
    const since = params.since ?? until - 7 * DAY_MS;
    reply.ok(
      await spend.usageSummary({
        by: params.by,
        since,
        until,
        ...(params.agentId !== undefined ? { agentId: params.agentId } : {}),
        ...(sessionKey !== undefined ? { sessionKey } : {}),
        ...(conn.access.seesAllSessions ? {} : { visible: (key: string) => conn.access.sessionGranted(key) }),
      }),
    );
  },
});

/** Runs waiting because a `pause` budget is used up, in the sessions this client may approve. */
export const budgetApprovalListMethod = defineMethod({
  name: "budget.approval.list",
  scope: "approvals",
  params: budgetApprovalListParams,
  handle({ conn, gw, reply }) {
    const approvals = spendOf(gw)
      .approvals.pending()
      .filter((a) => conn.access.canApprove(a.sessionKey));
    reply.ok({ approvals });
  },
});

/** An operator's answer to a paused run: allow-once, raise (the budget stops pausing this run), deny. */
export const budgetApprovalResolveMethod = defineMethod({
  name: "budget.approval.resolve",
  scope: "approvals",
  params: budgetApprovalResolveParams,
  handle({ params, conn, gw, reply }) {
    const approvals = spendOf(gw).approvals;
    const pending = approvals.get(params.id);
    if (pending) conn.access.requireApprove(pending.sessionKey);
    try {
      const resolved = approvals.resolve(params.id, params.decision, conn.actor);
      gw.logger.info(`budget approval ${params.id} answered ${params.decision} by ${conn.actor}`, {
        runId: resolved.runId,
        budget: resolved.budget,
      });
      reply.ok(resolved);
    } catch (err) {
      if (!(err instanceof BudgetApprovalError)) throw err;
      throw new GatewayError({ code: ErrorCodes.notFound, message: `params.id: ${err.message}` });
    }
  },
});
