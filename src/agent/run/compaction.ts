import type { ChatMessage, ToolSpec } from "../../providers/types.js";
import { type CompactionSplit, splitForCompaction } from "./compaction-split.js";
import { summaryMessage, summaryText } from "./compaction-summary.js";
import {
  contextBudget,
  DEFAULT_KEEP_RECENT_TOKENS,
  keepRecentBudget,
  oversizedMessageLimit,
  summaryMaxTokens,
} from "./context-budget-check.js";
import { type SummarizeHistoryResult, type SummarizePort, summarizeHistory } from "./summarize-history.js";
import { estimateContextTokens, estimateMessagesTokens } from "./token-estimate.js";
import { cutOversizedMessages } from "./truncate-oversized.js";

export const DEFAULT_MAX_COMPACTION_ATTEMPTS = 3;

/** threshold: projected usage reached the budget; overflow: the provider refused the context; manual: /compact */
export type CompactionReason = "threshold" | "overflow" | "manual";

export interface CompactContextInput {
  messages: readonly ChatMessage[];
  system?: string;
  tools?: readonly ToolSpec[];
  /** context window of the run's model */
  window: number;
  /** tokens kept free for the reply and the summary: compactionReserve(window, configured) */
  reserve: number;
  /** agents.defaults.compaction.keepRecentTokens (capped by keepRecentBudget) */
  keepRecentTokens?: number;
  summarize: SummarizePort;
  /** context window of the summarizer model when it is not the run's model */
  summarizerWindow?: number;
  /** agents.defaults.compaction.maxAttempts */
  maxAttempts?: number;
  /** compactions already done in this run */
  attemptsSoFar: number;
  reason: CompactionReason;
  /** from `/compact <instructions>` */
  instructions?: string;
  signal: AbortSignal;
}

interface Measured {
  tokensBefore: number;
  /** the run's compaction number this call was (attemptsSoFar + 1) */
  attempt: number;
}

export type CompactionResult =
  | (Measured & {
      outcome: "compacted";
      summary: string;
      /** index in the input of the first message kept verbatim; messages before it are in the summary */
      firstKeptIndex: number;
      /** the new context: the summary message, then the kept messages (oversized ones cut) */
      messages: ChatMessage[];
      tokensAfter: number;
      summarizedCount: number;
      /** kept messages that were cut to head + tail because one alone was too big */
      truncatedCount: number;
      summarizerCalls: number;
    })
  | (Measured & {
      /** cutting oversized messages alone made the context fit (no summary, no compaction row): retry with `messages` */
      outcome: "truncated";
      messages: ChatMessage[];
      tokensAfter: number;
      truncatedCount: number;
    })
  | (Measured & { outcome: "nothing_to_compact" })
  | (Measured & { outcome: "failed"; kind: "context_length"; message: string; tokensAfter: number })
  | (Measured & { outcome: "exhausted"; kind: "context_length"; message: string; maxAttempts: number });

const ADVICE = "Send /new to start a fresh session.";

function fmt(n: number): string {
  return n.toLocaleString("en-US");
}

function doesNotFit(tokens: number, budget: number, input: CompactContextInput, why: string): string {
  return (
    `The conversation does not fit the model's context window: ${why} It is about ${fmt(tokens)} tokens; ` +
    `${fmt(budget)} are available (${fmt(input.window)} minus ${fmt(input.reserve)} kept free for the reply). ${ADVICE}`
  );
}

/**
 * One compaction: cut oversized messages, summarize the oldest part of the history, keep the recent part verbatim,
 * and check that the result fits. It never retries itself: a summary that does not bring the context under the
 * budget, or that is no shorter than what it replaced, is `failed`, and the caller ends the run; the caller counts
 * attempts per run and gets `exhausted` past `maxAttempts`. Errors of the summarize port (abort, provider error)
 * propagate unchanged.
 */
export async function compactContext(input: CompactContextInput): Promise<CompactionResult> {
  const tokensBefore = estimateContextTokens(input.messages, input.system, input.tools);
  const measured: Measured = { tokensBefore, attempt: input.attemptsSoFar + 1 };
  const budget = contextBudget(input.window, input.reserve);
  const maxAttempts = input.maxAttempts ?? DEFAULT_MAX_COMPACTION_ATTEMPTS;
  if (input.attemptsSoFar >= maxAttempts) {
    const why = `compaction already ran ${input.attemptsSoFar} times in this run, the most allowed.`;
    const message = doesNotFit(tokensBefore, budget, input, why);
    return { ...measured, outcome: "exhausted", kind: "context_length", maxAttempts, message };
  }

  const cut = cutOversizedMessages(input.messages, oversizedMessageLimit(input.window, input.reserve));
  // Cutting is free and summarizing costs a model call, so when cutting alone makes the context fit, that is it
  // (except for /compact, where the user asked for a summary).
  const cutTokens = estimateContextTokens(cut.messages, input.system, input.tools);
  if (cut.cut > 0 && input.reason !== "manual" && cutTokens < budget) {
    return {
      ...measured,
      outcome: "truncated",
      messages: cut.messages,
      tokensAfter: cutTokens,
      truncatedCount: cut.cut,
    };
  }
  // Each further attempt in the same run keeps half as much verbatim as the one before: a retry that repeated the
  // same compaction would meet the same refusal (the estimate is crude, the provider's count is what counts).
  const keep = keepRecentBudget(input.window, input.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS);
  const split = splitForCompaction(cut.messages, Math.floor(keep / 2 ** input.attemptsSoFar));
  const previousSummary = summaryText(split.toSummarize[0]);
  const fresh = previousSummary === undefined ? split.toSummarize : split.toSummarize.slice(1);
  if (fresh.length === 0) return withoutSummary(input, measured, cut, budget);

  const summarized = await summarizeHistory({
    messages: fresh,
    summarize: input.summarize,
    maxInputTokens: contextBudget(input.summarizerWindow ?? input.window, input.reserve),
    maxOutputTokens: summaryMaxTokens(input.reserve),
    instructions: input.instructions,
    previousSummary,
    signal: input.signal,
  });
  return judgeSummary(input, measured, budget, split, cut.cut, summarized);
}

/** The compacted context if the summary is usable and makes it fit; `failed` (with the reason) if not. */
function judgeSummary(
  input: CompactContextInput,
  measured: Measured,
  budget: number,
  split: CompactionSplit,
  truncatedCount: number,
  summarized: SummarizeHistoryResult,
): CompactionResult {
  const messages = [summaryMessage(summarized.summary), ...split.kept];
  const tokensAfter = estimateContextTokens(messages, input.system, input.tools);
  const failed = (why: string): CompactionResult => {
    const message = doesNotFit(tokensAfter, budget, input, why);
    return { ...measured, outcome: "failed", kind: "context_length", tokensAfter, message };
  };
  if (summarized.summary === "") return failed("the summarizer returned no text.");
  const replaced = estimateMessagesTokens(split.toSummarize);
  const summaryTokens = estimateMessagesTokens(messages.slice(0, 1));
  if (summaryTokens >= replaced) {
    return failed(
      `the summary (about ${fmt(summaryTokens)} tokens) is no shorter than what it replaced (about ${fmt(replaced)}).`,
    );
  }
  if (tokensAfter >= budget) return failed("even after compaction it is too big.");
  return {
    ...measured,
    outcome: "compacted",
    summary: summarized.summary,
    firstKeptIndex: split.firstKeptIndex,
    messages,
    tokensAfter,
    summarizedCount: split.toSummarize.length,
    truncatedCount,
    summarizerCalls: summarized.calls,
  };
}

/**
 * Nothing older than the latest step to summarize. Cutting oversized messages may still have made it fit; if not,
 * or if the provider already refused a context this size, there is nothing more to try.
 */
function withoutSummary(
  input: CompactContextInput,
  measured: Measured,
  cut: { messages: ChatMessage[]; cut: number },
  budget: number,
): CompactionResult {
  const tokensAfter = estimateContextTokens(cut.messages, input.system, input.tools);
  const fits = tokensAfter < budget;
  if (fits && cut.cut > 0) {
    return { ...measured, outcome: "truncated", messages: cut.messages, tokensAfter, truncatedCount: cut.cut };
  }
  if (fits && input.reason !== "overflow") return { ...measured, outcome: "nothing_to_compact" };
  const why = fits
    ? "the provider refused it and there is no older history to summarize."
    : "there is no older history to summarize, the latest messages alone are too big.";
  return {
    ...measured,
    outcome: "failed",
    kind: "context_length",
    tokensAfter,
    message: doesNotFit(tokensAfter, budget, input, why),
  };
}

// What the run needs to wire compaction, from one module.
export { messagesFromContextRows, summaryMessage } from "./compaction-summary.js";
export { compactionReserve, needsCompaction } from "./context-budget-check.js";
export type { SummarizePort, SummaryPrompt } from "./summarize-history.js";
export { projectContextTokens } from "./token-estimate.js";
export { cutOversizedMessages } from "./truncate-oversized.js";
