import {
  type AssistantMessage,
  type ChatMessage,
  contentText,
  type ToolResultMessage,
  type UserMessage,
} from "../../providers/types.js";
import type { SummarizePort, SummaryPrompt } from "./summarize-history.js";

/** Message builders shared by the compaction tests. */
export const user = (content: string): UserMessage => ({ role: "user", content });
export const said = (text: string): AssistantMessage => ({ role: "assistant", content: [{ type: "text", text }] });
export const call = (id: string, name: string, args: Record<string, unknown>): AssistantMessage => ({
  role: "assistant",
  content: [{ type: "toolCall", id, name, arguments: args }],
});
export const result = (id: string, content: string, toolName = "read"): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName,
  content,
  isError: false,
});

/** `turns` user/assistant exchanges of about `tokens` tokens each message. */
export function conversation(turns: number, tokens: number): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = 1; i <= turns; i++) {
    out.push(user(`question ${i} `.padEnd(tokens * 4, "q")));
    out.push(said(`answer ${i} `.padEnd(tokens * 4, "a")));
  }
  return out;
}

/** A fake summarizer model port that records every prompt and answers with `answer(prompt, callNumber)`. */
export function fakeSummarizer(answer: (prompt: SummaryPrompt, call: number) => string) {
  const prompts: SummaryPrompt[] = [];
  const summarize: SummarizePort = async (prompt) => {
    prompts.push(prompt);
    return answer(prompt, prompts.length);
  };
  return { summarize, prompts };
}

/** The conversation text of a summarizer prompt (its single user message). */
export function promptText(prompt: SummaryPrompt): string {
  const [only] = prompt.messages;
  return only.role === "user" ? contentText(only.content) : "";
}
