import { compactionReserve } from "../../prompt/context-budget.js";

/**
 * Budget arithmetic for compaction, all in estimated tokens. The reserve itself (min(configured, window/4)) is
 * prompt/context-budget.ts's `compactionReserve`, re-exported so the run imports one module.
 */
export { compactionReserve };

export const DEFAULT_KEEP_RECENT_TOKENS = 20_000;

/** What the request may use: the window minus the reserve kept free for the reply and a summary. */
export function contextBudget(window: number, reserve: number): number {
  return Math.max(0, window - reserve);
}

/** Compact before calling the model when the projected request reaches the budget. */
export function needsCompaction(projectedTokens: number, window: number, reserve: number): boolean {
  return projectedTokens >= contextBudget(window, reserve);
}

/**
 * How much recent history compaction keeps verbatim. The configured amount (default 20,000) is capped at a quarter
 * of the window: with the reserve also capped at a quarter, at least half of the window is left for the system
 * prompt and the summary. Without the cap a small window (4,000 tokens) would keep more than it can hold and
 * compaction could never bring the context under budget.
 */
export function keepRecentBudget(window: number, keepRecentTokens: number = DEFAULT_KEEP_RECENT_TOKENS): number {
  const wanted = Number.isFinite(keepRecentTokens) ? Math.max(0, keepRecentTokens) : DEFAULT_KEEP_RECENT_TOKENS;
  return Math.min(wanted, Math.floor(Math.max(0, window) / 4));
}

/**
 * The largest single message the context keeps whole: half of the budget. A bigger one (a huge tool result, a
 * pasted file) is cut to head and tail instead, because summarizing around it can never make the context fit.
 */
export function oversizedMessageLimit(window: number, reserve: number): number {
  return Math.floor(contextBudget(window, reserve) / 2);
}

/**
 * Output tokens asked of the summarizer: most of the reserve, which exists to make room for exactly this (and the
 * reply). The rest of the reserve absorbs the estimate's error.
 */
export function summaryMaxTokens(reserve: number): number {
  return Math.max(256, Math.floor(reserve * 0.8));
}
