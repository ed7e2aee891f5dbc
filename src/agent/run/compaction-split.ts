import type { ChatMessage } from "../../providers/types.js";
import { estimateMessageTokens } from "./token-estimate.js";

export interface CompactionSplit {
  /** the oldest messages, to be replaced by a summary; empty when there is nothing to compact */
  toSummarize: ChatMessage[];
  /** the most recent messages, kept verbatim */
  kept: ChatMessage[];
  /** index in the input of kept[0] (= toSummarize.length) */
  firstKeptIndex: number;
}

/**
 * Where compaction cuts the history. The cut may fall before any user or assistant message but never before a
 * tool result, so an assistant's tool calls always stay together with their results (providers reject a result
 * whose call is missing).
 *
 * The rule: keep the longest recent part that fits `keepRecentTokens` and starts at an allowed cut. When even the
 * last allowed cut leaves more than that (one long turn of tool calls), keep from the last allowed cut anyway:
 * the latest assistant step with its results, or the latest user message. The user's request can then end up in
 * the summary, which is told to restate it. The first message is never kept by this rule, so something is always
 * summarized; only a history with no allowed cut after its first message (one message, or one message followed by
 * tool results) has nothing to compact.
 */
export function splitForCompaction(messages: readonly ChatMessage[], keepRecentTokens: number): CompactionSplit {
  let firstKept = messages.length;
  let lastCut = -1;
  let suffixTokens = 0;
  for (let i = messages.length - 1; i >= 1; i--) {
    suffixTokens += estimateMessageTokens(messages[i]);
    if (messages[i].role === "toolResult") continue;
    if (lastCut < 0) lastCut = i;
    if (suffixTokens > keepRecentTokens) break;
    firstKept = i;
  }
  if (firstKept === messages.length) firstKept = Math.max(lastCut, 0);
  return {
    toSummarize: messages.slice(0, firstKept),
    kept: messages.slice(firstKept),
    firstKeptIndex: firstKept,
  };
}
