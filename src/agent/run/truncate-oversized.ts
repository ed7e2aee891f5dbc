import type { AssistantBlock, ChatMessage } from "../../providers/types.js";
import { estimateMessageTokens, MESSAGE_OVERHEAD_TOKENS, messageChars } from "./token-estimate.js";

/**
 * Cutting one message that is too big for the context (a 2 MB tool result, a pasted log). Compaction cannot shrink
 * such a message by summarizing the others, so it is cut to its head and tail with a marker saying how much went
 * missing; the model sees that something was cut and can ask for the part it needs.
 */

function cutMarker(removed: number): string {
  return `\n[... ${removed.toLocaleString("en-US")} characters cut from the middle ...]\n`;
}

/** Moves a cut position off the second half of a surrogate pair, so no emoji is split into invalid UTF-16. */
function safeIndex(text: string, index: number): number {
  const code = text.charCodeAt(index - 1);
  return code >= 0xd800 && code <= 0xdbff ? index - 1 : index;
}

/**
 * `text` itself when it fits `maxChars`, else head + marker + tail in at most `maxChars` characters (or just the
 * marker when even that does not fit). Head and tail get equal shares: the start says what the text is, the end
 * usually holds the outcome (the error at the bottom of a log).
 */
export function truncateText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  // the marker's length depends on the number it shows, so size it for the largest possible cut
  const room = Math.max(0, maxChars - cutMarker(text.length).length);
  const head = safeIndex(text, Math.ceil(room / 2));
  const tailStart = safeIndex(text, text.length - Math.floor(room / 2));
  return text.slice(0, head) + cutMarker(tailStart - head) + text.slice(tailStart);
}

/**
 * The level every cuttable string is capped at so that their total fits `budget` (water filling): short strings
 * stay whole and the long ones share what is left equally.
 */
function capLevel(lengths: number[], budget: number): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  let remaining = Math.max(0, budget);
  for (let i = 0; i < sorted.length; i++) {
    const count = sorted.length - i;
    if (sorted[i] * count > remaining) return Math.floor(remaining / count);
    remaining -= sorted[i];
  }
  return Number.POSITIVE_INFINITY;
}

/** A cuttable string; `size` is what it adds to messageChars (JSON length for tool call arguments). */
type Slot = { get: () => string; set: (s: string) => void; size: (s: string) => number };
const plainSize = (s: string) => s.length;
const jsonSize = (s: string) => JSON.stringify(s).length - 2;

/**
 * The strings of a message that may be cut. A signed thinking block is left whole because the provider verifies
 * it when it is sent back; tool call arguments are cut only in their top-level string values, so they stay JSON.
 */
function slotsOf(message: ChatMessage): { message: ChatMessage; slots: Slot[] } {
  if (message.role !== "assistant") {
    const copy = { ...message };
    if (typeof copy.content === "string") {
      const text = copy;
      return {
        message: copy,
        slots: [{ get: () => text.content as string, set: (s) => (text.content = s), size: plainSize }],
      };
    }
    // Only the text parts can be cut; an image is already downscaled and counts by its pixels.
    const slots: Slot[] = [];
    copy.content = copy.content.map((part) => {
      if (part.type !== "text") return part;
      const b = { ...part };
      slots.push({ get: () => b.text, set: (s) => (b.text = s), size: plainSize });
      return b;
    });
    return { message: copy, slots };
  }
  const slots: Slot[] = [];
  const content = message.content.map((block): AssistantBlock => {
    if (block.type === "text") {
      const b = { ...block };
      slots.push({ get: () => b.text, set: (s) => (b.text = s), size: plainSize });
      return b;
    }
    if (block.type === "thinking") {
      const b = { ...block };
      if (b.signature === undefined)
        slots.push({ get: () => b.thinking, set: (s) => (b.thinking = s), size: plainSize });
      return b;
    }
    const args = { ...block.arguments };
    for (const [key, value] of Object.entries(args)) {
      if (typeof value === "string")
        slots.push({ get: () => args[key] as string, set: (s) => (args[key] = s), size: jsonSize });
    }
    return { ...block, arguments: args };
  });
  return { message: { ...message, content }, slots };
}

/**
 * `message` itself when its estimate is within `maxTokens`, else a copy whose long strings are cut (head + tail)
 * so the estimate fits. Parts that cannot be cut (ids, names, signed thinking) are kept, so a message made only of
 * those can stay above the limit.
 */
export function truncateOversized(message: ChatMessage, maxTokens: number): ChatMessage {
  const chars = messageChars(message);
  if (estimateMessageTokens(message) <= maxTokens) return message;
  const { message: copy, slots } = slotsOf(message);
  const originals = slots.map((s) => s.get());
  const sizes = slots.map((slot, i) => slot.size(originals[i]));
  const maxChars = Math.max(0, maxTokens - MESSAGE_OVERHEAD_TOKENS) * 4;
  const fixed = chars - sizes.reduce((sum, n) => sum + n, 0);
  let budget = maxChars - fixed;
  // The cut is made in characters but argument strings are measured as JSON, where quotes and newlines grow when
  // escaped, so one pass can overshoot; each further pass takes the overshoot off the budget. Bounded: after four
  // passes the cut stands.
  for (let pass = 0; pass < 4; pass++) {
    const level = capLevel(sizes, budget);
    for (const [i, slot] of slots.entries()) {
      if (sizes[i] > level) slot.set(truncateText(originals[i], level));
    }
    const over = messageChars(copy) - maxChars;
    if (over <= 0) break;
    budget -= over;
  }
  return copy;
}

/** Applies truncateOversized to every message; `cut` counts the messages that changed. */
export function cutOversizedMessages(
  messages: readonly ChatMessage[],
  maxTokens: number,
): { messages: ChatMessage[]; cut: number } {
  let cut = 0;
  const out = messages.map((m) => {
    const t = truncateOversized(m, maxTokens);
    if (t !== m) cut++;
    return t;
  });
  return { messages: out, cut };
}
