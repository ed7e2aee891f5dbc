import { type ChatMessage, isContextMessage, type UserMessage } from "../../providers/types.js";
import type { TranscriptRow } from "../../storage/types.js";

/**
 * How a compaction summary sits in the context: a user message at the start, marked so that the model reads it as
 * a record of what came before (not as a new request) and so that the next compaction recognizes it as the
 * previous summary and builds on it.
 */
export const SUMMARY_PREFIX = "[Summary of the earlier conversation]\n";

export function summaryMessage(summary: string): UserMessage {
  return { role: "user", content: SUMMARY_PREFIX + summary };
}

/** The summary text when `message` is a compaction summary, else undefined. */
export function summaryText(message: ChatMessage | undefined): string | undefined {
  if (message?.role !== "user" || typeof message.content !== "string") return undefined;
  if (!message.content.startsWith(SUMMARY_PREFIX)) return undefined;
  return message.content.slice(SUMMARY_PREFIX.length);
}

/**
 * The model's history from `Store.readContextRows`: the latest compaction row becomes the summary message, the
 * message rows follow. Other rows (resets, older compactions) carry no message and are skipped, and so are the
 * failure markers of runs that ended without an answer (isContextMessage).
 */
export function messagesFromContextRows(rows: readonly TranscriptRow[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const row of rows) {
    if (row.kind === "compaction" && row.text !== undefined && out.length === 0) out.push(summaryMessage(row.text));
    else if (isContextRow(row)) out.push(row.message);
  }
  return out;
}

/** A message row whose message goes to the model (history-cache.ts keeps its seqs in step with this). */
export function isContextRow(row: TranscriptRow): row is TranscriptRow & { message: ChatMessage } {
  return row.kind === "message" && row.message !== undefined && isContextMessage(row.message);
}
