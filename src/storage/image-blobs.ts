import { createHash } from "node:crypto";
import type { ChatMessage, ImageBlock, MessagePart } from "../providers/types.js";

/**
 * Image bytes in transcripts, engine-free: a row keeps `{type: "image", mimeType, blob, bytes, ...}` and the bytes are
 * stored once per session under their sha256 (storage/types.ts appendTranscript). The Postgres store uses these;
 * the SQLite engine does the same inline, inside its synchronous transaction.
 */
export interface ImageBlobRow {
  sha256: string;
  mimeType: string;
  bytes: Buffer;
}

/** Whether the message can hold image parts at all (assistant turns and plain strings never do). */
function partsOf(message: ChatMessage): MessagePart[] | undefined {
  if (message.role === "assistant" || typeof message.content === "string") return undefined;
  return message.content;
}

/**
 * The message as its row stores it, and the blobs to store with it: each image part with `data` becomes a reference.
 * A message without such parts is returned as it is, with no blobs.
 */
export function splitImageData(message: ChatMessage): { message: ChatMessage; blobs: ImageBlobRow[] } {
  const parts = partsOf(message);
  if (!parts?.some((p) => p.type === "image" && p.data !== undefined)) return { message, blobs: [] };
  const blobs: ImageBlobRow[] = [];
  const content = parts.map((part): MessagePart => {
    if (part.type !== "image" || part.data === undefined) return part;
    const bytes = Buffer.from(part.data, "base64");
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    blobs.push({ sha256, mimeType: part.mimeType, bytes });
    const { data: _data, ...meta } = part;
    return { ...meta, blob: sha256, bytes: bytes.byteLength };
  });
  return { message: { ...message, content } as ChatMessage, blobs };
}

/** The sha256 of every image reference in the message that has no bytes loaded. */
export function imageRefs(message: ChatMessage): string[] {
  const parts = partsOf(message);
  if (!parts) return [];
  const refs: string[] = [];
  for (const p of parts) if (p.type === "image" && p.blob !== undefined && p.data === undefined) refs.push(p.blob);
  return refs;
}

/** The message with each reference's bytes loaded back (for the model); a blob not found stays a reference. */
export function withImageData(message: ChatMessage, blobs: ReadonlyMap<string, Buffer>): ChatMessage {
  const parts = partsOf(message);
  if (!parts?.some((p) => p.type === "image" && p.blob !== undefined && p.data === undefined)) return message;
  const content = parts.map((part): MessagePart => {
    if (part.type !== "image" || part.blob === undefined || part.data !== undefined) return part;
    const found = blobs.get(part.blob);
    return found ? ({ ...part, data: found.toString("base64") } satisfies ImageBlock) : part;
  });
  return { ...message, content } as ChatMessage;
}
