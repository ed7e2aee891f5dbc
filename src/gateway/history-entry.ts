import type { HistoryEntry } from "../protocol/payloads.js";
import { type ChatMessage, type ImageBlock, imageBytes, type MessageContent } from "../providers/types.js";
import type { TranscriptRow } from "../storage/types.js";
import { redactTranscriptRow } from "../tools/redact-transcript.js";

/**
 * An image's bytes ride along in a history entry (so a chat client can show it) up to this size, and an entry
 * carries at most HISTORY_ENTRY_IMAGE_BYTES of them; any other image is a reference (`blob`, size, `omitted: true`).
 * Images are already scaled down before they are stored (tools/image-prepare.ts), so most fit.
 */
export const HISTORY_IMAGE_MAX_BYTES = 256 * 1024;
export const HISTORY_ENTRY_IMAGE_BYTES = 1024 * 1024;

/**
 * A transcript row as chat clients read it (chat.history, session.message): the stored message spread into
 * OpenClaw's message shape, after the same redaction events get, with image bytes only within the limits above.
 */
export function historyEntry(stored: TranscriptRow): HistoryEntry {
  const r = redactTranscriptRow(stored);
  return {
    seq: r.seq,
    kind: r.kind,
    createdAt: r.createdAt,
    ...(r.runId !== undefined ? { runId: r.runId } : {}),
    ...(r.message !== undefined ? withImageLimits(r.message) : {}),
    timestamp: r.createdAt,
    ...(r.text !== undefined ? { text: r.text } : {}),
  };
}

function withImageLimits(message: ChatMessage): ChatMessage {
  if (message.role === "assistant" || typeof message.content === "string") return message;
  let room = HISTORY_ENTRY_IMAGE_BYTES;
  const content: MessageContent = message.content.map((part) => {
    if (part.type !== "image") return part;
    const bytes = imageBytes(part);
    if (part.data !== undefined && bytes <= HISTORY_IMAGE_MAX_BYTES && bytes <= room) {
      room -= bytes;
      return part;
    }
    const { data: _bytes, ...reference } = part;
    return { ...reference, bytes, omitted: true } as ImageBlock;
  });
  return { ...message, content };
}
