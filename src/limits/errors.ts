/** What a budget or cap measured when it refused: its name, the window, the spend and the limit it hit. */
export interface BudgetBreach {
  /** the budget's id (`limits.budgets[].id`, else `limits.budgets.<i>`) or the cap's key (`limits.run.maxModelCalls`) */
  budget: string;
  window: string;
  /** "usd" | "tokens" | "calls" | "seconds": what the spend and limit count */
  unit: "usd" | "tokens" | "calls" | "seconds";
  spent: number;
  limit: number;
}

function amount(unit: BudgetBreach["unit"], n: number): string {
  if (unit === "usd") return `$${n.toFixed(n < 1 ? 4 : 2)}`;
  if (unit === "seconds") return `${Math.round(n)} s`;
  return `${n.toLocaleString("en-US")} ${unit === "calls" ? "model calls" : "tokens"}`;
}

/** The sentence every surface shows for a breach (run error, intake refusal, log line). */
export function describeBreach(b: BudgetBreach): string {
  return `budget ${b.budget} (${b.window}) exhausted: spent ${amount(b.unit, b.spent)} of ${amount(b.unit, b.limit)}`;
}

/**
 * A run stopped (or an input refused at intake) because a budget or a run cap is used up. `kind` is the run's error
 * kind and `code` the wire error code: `budget_exceeded` on every surface.
 */
export class BudgetExceededError extends Error {
  readonly kind = "budget_exceeded";
  readonly code = "budget_exceeded";
  constructor(
    readonly breach: BudgetBreach,
    why?: string,
  ) {
    super(why ? `${describeBreach(breach)} (${why})` : describeBreach(breach));
    this.name = "BudgetExceededError";
  }
}

/** An intake refused by a token's rate limit: the wire error `rate_limited`, with when to try again. */
export class RateLimitedError extends Error {
  readonly code = "rate_limited";
  readonly retryable = true;
  constructor(
    message: string,
    readonly retryAfterMs: number,
    /** the limit that refused, for the audit row's code: runsPerMinute, concurrentRuns, tokensPerDay */
    readonly limit: "runsPerMinute" | "concurrentRuns" | "tokensPerDay",
  ) {
    super(message);
    this.name = "RateLimitedError";
  }
}
