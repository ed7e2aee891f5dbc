import { estimateTokens } from "../../prompt/context-budget.js";
import { type ChatMessage, contentWithImageNotes } from "../../providers/types.js";
import { truncateText } from "./truncate-oversized.js";

/** The model port compaction summarizes with: one plain call, no tools, returns the text of the answer. */
export interface SummaryPrompt {
  system: string;
  messages: ChatMessage[];
  /** output tokens to ask for */
  maxTokens?: number;
}
export type SummarizePort = (prompt: SummaryPrompt, signal: AbortSignal) => Promise<string>;

export const SUMMARIZER_SYSTEM_PROMPT = `You write the working memory of an AI assistant whose conversation has grown too long for its context window. The older part of the conversation is about to be replaced by your summary. The assistant will continue from your summary plus the most recent messages, which it still sees word for word, so it must be able to carry on without asking the user to repeat anything.

Keep:
- what the user asked for and what they are waiting for now, quoting them where the exact words matter;
- decisions that were made and why, and approaches that were tried and abandoned;
- open tasks and next steps, in order, and what is already done;
- exact identifiers: file paths, names of functions, variables and settings, commands, URLs, ids, numbers, error messages;
- the user's preferences and constraints (style, tools, things to avoid);
- what tool calls found or changed that still matters: results, edits made to files, failures and their causes.

Drop greetings, repetition and tool output that no longer matters. Do not invent or guess; mark anything uncertain as uncertain. Do not answer the user or continue the conversation yourself. Write plain text in short sections with bullet points, without a preamble.`;

/** Tool arguments and results are shown in part: the summary needs what was done and found, not every byte. */
const RENDERED_ARGUMENTS_CHARS = 2_000;
const RENDERED_RESULT_CHARS = 4_000;

/** One message as compact transcript lines: who spoke, tool calls with their arguments, tool results. */
export function renderMessage(message: ChatMessage): string {
  if (message.role === "user") return `User: ${contentWithImageNotes(message.content)}`;
  if (message.role === "toolResult") {
    const label = message.isError ? "Tool error" : "Tool result";
    return `${label} (${message.toolName}): ${truncateText(contentWithImageNotes(message.content), RENDERED_RESULT_CHARS)}`;
  }
  const lines: string[] = [];
  for (const block of message.content) {
    // thinking is the model's scratch work; what it decided shows in its text and tool calls
    if (block.type === "text" && block.text.trim() !== "") lines.push(`Assistant: ${block.text}`);
    if (block.type === "toolCall") {
      const args = truncateText(JSON.stringify(block.arguments), RENDERED_ARGUMENTS_CHARS);
      lines.push(`Tool call ${block.name}: ${args}`);
    }
  }
  return lines.join("\n");
}

export interface SummarizeHistoryInput {
  messages: readonly ChatMessage[];
  summarize: SummarizePort;
  /** input tokens one summarizer call may use, prompt included */
  maxInputTokens: number;
  maxOutputTokens?: number;
  /** extra instructions, e.g. from `/compact <instructions>` */
  instructions?: string;
  /** summary of what came before `messages`, which the new summary must include */
  previousSummary?: string;
  signal: AbortSignal;
}

export interface SummarizeHistoryResult {
  /** trimmed; empty when the summarizer returned no text (the stages after it are not run) */
  summary: string;
  calls: number;
}

function stagePrompt(input: SummarizeHistoryInput, carried: string | undefined, conversation: string): string {
  const parts: string[] = [];
  if (carried !== undefined) {
    parts.push(`Summary of the conversation before the part below:\n<summary>\n${carried}\n</summary>`);
  }
  parts.push(
    `The conversation to summarize, oldest first ("Tool call" and "Tool result" lines are the assistant's actions and what they returned):\n<conversation>\n${conversation}\n</conversation>`,
  );
  parts.push(
    carried !== undefined
      ? "Write one summary that covers both the earlier summary and this part; it replaces the earlier summary entirely."
      : "Write the summary.",
  );
  if (input.instructions?.trim()) parts.push(`Additional instructions from the user:\n${input.instructions.trim()}`);
  return parts.join("\n\n");
}

/**
 * Rendered messages grouped in order into chunks: the first of at most `firstTokens`, the others of at most
 * `restTokens`. A message bigger than `restTokens` is cut to it.
 */
function chunkRendered(messages: readonly ChatMessage[], firstTokens: number, restTokens: number): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  let tokens = 0;
  for (const message of messages) {
    const text = truncateText(renderMessage(message), restTokens * 4);
    if (text === "") continue;
    const t = estimateTokens(text) + 1;
    const limit = chunks.length === 0 ? firstTokens : restTokens;
    if (current.length > 0 && tokens + t > limit) {
      chunks.push(current.join("\n"));
      current = [];
      tokens = 0;
    }
    current.push(text);
    tokens += t;
  }
  if (current.length > 0) chunks.push(current.join("\n"));
  return chunks;
}

/**
 * Summarizes `messages` with the model, in stages when they do not fit one call: the rendered conversation is cut
 * into chunks in order and each stage summarizes its chunk together with the summary so far. Half of each call's
 * input is for the chunk and half for the carried summary (cut to that half if it grew past it); only a first stage
 * with no summary to carry uses all of it. So the number of calls is fixed up front by the size of the history and
 * a stage can never run out of room.
 */
export async function summarizeHistory(input: SummarizeHistoryInput): Promise<SummarizeHistoryResult> {
  const overhead = estimateTokens(SUMMARIZER_SYSTEM_PROMPT + stagePrompt(input, "", "")) + 16;
  const room = Math.max(0, input.maxInputTokens - overhead);
  const half = Math.max(64, Math.floor(room / 2));
  let carried = input.previousSummary?.trim() || undefined;
  // with no summary to carry yet, the first stage has the whole room for conversation
  const chunks = chunkRendered(input.messages, carried === undefined ? half * 2 : half, half);
  let calls = 0;
  for (const chunk of chunks) {
    const previous = carried === undefined ? undefined : truncateText(carried, half * 4);
    const prompt: SummaryPrompt = {
      system: SUMMARIZER_SYSTEM_PROMPT,
      messages: [{ role: "user", content: stagePrompt(input, previous, chunk) }],
      ...(input.maxOutputTokens !== undefined ? { maxTokens: input.maxOutputTokens } : {}),
    };
    // a stage that would start after an abort is not started: the caller's signal ends the run, not just the call
    input.signal.throwIfAborted();
    calls++;
    const summary = (await input.summarize(prompt, input.signal)).trim();
    if (summary === "") return { summary: "", calls };
    carried = summary;
  }
  return { summary: carried ?? "", calls };
}
