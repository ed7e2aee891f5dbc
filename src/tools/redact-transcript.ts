import { type AssistantBlock, type ChatMessage, mapContentText } from "../providers/types.js";
import type { TranscriptRow } from "../storage/types.js";
import { redactSecrets, redactText } from "./sanitize.js";

/*
 * What a reader of the stored transcript sees (chat.history, `loopgate sessions show`): the rules events use —
 * tool arguments under credential-like keys become "[redacted]", credential-looking text is masked wherever it
 * sits. The model's context is read separately (readContextRows) and keeps the real values.
 */

function redactBlock(block: AssistantBlock): AssistantBlock {
  switch (block.type) {
    case "text":
      return { ...block, text: redactText(block.text) };
    case "thinking":
      return { ...block, thinking: redactText(block.thinking) };
    case "toolCall":
      return { ...block, arguments: redactSecrets(block.arguments) };
  }
}

export function redactMessage(message: ChatMessage): ChatMessage {
  switch (message.role) {
    case "user":
    case "toolResult":
      return { ...message, content: mapContentText(message.content, redactText) };
    case "assistant":
      return { ...message, content: message.content.map(redactBlock) };
  }
}

export function redactTranscriptRow(row: TranscriptRow): TranscriptRow {
  return {
    ...row,
    ...(row.message !== undefined ? { message: redactMessage(row.message) } : {}),
    ...(row.text !== undefined ? { text: redactText(row.text) } : {}),
  };
}
