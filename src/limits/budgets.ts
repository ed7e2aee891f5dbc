import type { LoopgateConfig } from "../config/schema.js";
import { sessionGlob } from "../session/session-glob.js";
import type { CostQuery } from "../storage/types.js";
import type { WindowSpec } from "./windows.js";

export type LimitsConfig = LoopgateConfig["limits"];
export type BudgetConfig = LimitsConfig["budgets"][number];
export type RunCaps = LimitsConfig["run"];

/** Who spends: the run's agent, session and (when a gateway client started it) token identity. */
export interface Spender {
  agentId: string;
  sessionKey: string;
  token?: string;
}

/** One configured budget as it applies to one spender: whose spend it sums (`subject`), over which window. */
export interface AppliedBudget {
  readonly id: string;
  readonly scope: BudgetConfig["scope"];
  readonly window: WindowSpec | "run";
  readonly maxUsd?: number;
  readonly maxTokens?: number;
  readonly action: "stop" | "pause";
  /** the ledger filter of the spend this budget counts (empty for a global budget); unused for a `run` window */
  readonly subject: Pick<CostQuery, "agentId" | "sessionKey" | "token">;
}

/** A budget's name: its id, else its place in the config. */
export function budgetId(b: BudgetConfig, index: number): string {
  return b.id ?? `limits.budgets.${index}`;
}

/**
 * The budgets that apply to a spender. A budget without `match` applies to every agent (session, token) separately;
 * with one, to those its glob matches. A token budget never applies to a run no token started (a local run).
 */
export function applicableBudgets(budgets: readonly BudgetConfig[], who: Spender): AppliedBudget[] {
  const out: AppliedBudget[] = [];
  budgets.forEach((b, i) => {
    const subject = subjectOf(b, who);
    if (!subject) return;
    out.push({
      id: budgetId(b, i),
      scope: b.scope,
      window: b.window,
      ...(b.maxUsd !== undefined ? { maxUsd: b.maxUsd } : {}),
      ...(b.maxTokens !== undefined ? { maxTokens: b.maxTokens } : {}),
      action: b.action,
      subject,
    });
  });
  return out;
}

function subjectOf(b: BudgetConfig, who: Spender): AppliedBudget["subject"] | undefined {
  const matches = (value: string) => b.match === undefined || sessionGlob(b.match).test(value);
  switch (b.scope) {
    case "global":
      return {};
    case "agent":
      return matches(who.agentId) ? { agentId: who.agentId } : undefined;
    case "session":
      return matches(who.sessionKey) ? { sessionKey: who.sessionKey } : undefined;
    case "token":
      return who.token !== undefined && matches(who.token) ? { token: who.token } : undefined;
  }
}

/** What one run has spent so far: counted by its own metered calls (the `run` window and limits.run). */
export interface RunMeter {
  calls: number;
  usd: number;
  tokens: number;
  /** calls whose model had no price */
  unpriced: number;
  /** budgets an operator raised for this run (`budget.approval.resolve` "raise"): they no longer pause it */
  readonly raised: Set<string>;
}

/**
 * The run's spend limits (the RunProfile `limits` slot), resolved once at prepare: the budgets that apply to it, the
 * run caps, who it spends as, and its meter. The meter is the one mutable part: it belongs to this run alone, so it
 * lives and ends with the run's profile.
 */
export interface RunLimits {
  readonly spender: Spender;
  readonly budgets: readonly AppliedBudget[];
  readonly caps: RunCaps;
  /** when the run's limits were resolved (its prepare): limits.run.maxDurationSeconds counts from here */
  readonly startedAt: number;
  readonly meter: RunMeter;
}

export function resolveRunLimits(config: LimitsConfig, who: Spender, now: number): RunLimits {
  return {
    spender: who,
    budgets: applicableBudgets(config.budgets, who),
    caps: config.run,
    startedAt: now,
    meter: { calls: 0, usd: 0, tokens: 0, unpriced: 0, raised: new Set() },
  };
}
