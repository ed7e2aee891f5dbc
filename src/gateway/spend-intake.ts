import { BudgetExceededError, RateLimitedError } from "../limits/errors.js";
import type { AgentRequest } from "../protocol/run.js";
import { normalizeSessionKey } from "../session/keys.js";
import type { CallerConnection, GatewayContext } from "./context.js";

/**
 * SPEC 25 at intake, before anything is stored: the sender's token within its rate limits (runsPerMinute,
 * concurrentRuns, tokensPerDay) and no `stop` budget of the target already used up. A refusal is an audit row and
 * one log line; the request's error is `rate_limited` (with retryAfterMs) or `budget_exceeded`.
 */
export async function refuseOverSpendLimits(
  gw: GatewayContext,
  conn: CallerConnection,
  req: AgentRequest,
  sessionKey: string | undefined,
): Promise<void> {
  const spend = gw.service.rt.spend;
  if (!spend || sessionKey === undefined) return;
  const token = conn.access.tokenIdentity;
  try {
    if (token !== undefined) {
      const own = conn.access.tokenLimits;
      const limits = own ?? { values: spend.config.tokens, key: "limits.tokens" };
      await spend.rateLimits.check(token, limits.values, limits.key);
    }
    // only a configured `stop` budget can refuse at intake: with none (most gateways) there is nothing to look up
    if (spend.config.budgets.length === 0) return;
    const agentId = normalizeSessionKey(sessionKey, req.agentId ?? gw.service.rt.defaultAgentId).agentId;
    const breach = await spend.intakeBreach({ agentId, sessionKey, ...(token !== undefined ? { token } : {}) });
    if (breach) throw breach;
  } catch (err) {
    if (err instanceof RateLimitedError || err instanceof BudgetExceededError) {
      gw.audit.recordRefusal({
        occurredAt: gw.now(),
        actor: conn.actor,
        sessionKey,
        runId: req.idempotencyKey,
        code: err instanceof RateLimitedError ? `rate_limited:${err.limit}` : "budget_exceeded",
      });
      gw.logger.warn(`intake refused (${err.code}): ${err.message}`, {
        sessionKey,
        actor: conn.actor,
        ...(token !== undefined ? { token } : {}),
      });
    }
    throw err;
  }
}

/** A run accepted for a token counts against its rate limits until its final (here or on another node). */
export function countAcceptedRun(gw: GatewayContext, conn: CallerConnection, runId: string): void {
  const spend = gw.service.rt.spend;
  const token = conn.access.tokenIdentity;
  if (!spend || token === undefined) return;
  spend.acceptedRun(token, runId);
  void gw.service.final(runId).finally(() => spend.endedRun(runId));
}
