/**
 * Reply shaping (SPEC 9): the final payloads are the assistant text (+ optional reasoning), inline tool summaries
 * (verbose), and the model error text when the model failed — minus the silent token and messaging-tool repeats,
 * with a fallback tool-error reply when nothing else would be shown.
 */

// The payloads are what a client renders, so their shape is the wire type.
import type { ReplyPayload } from "../protocol/run.js";

export type { ReplyPayload };

export const SILENT_TOKEN = "NO_REPLY";

/** The whole text is the silent token: any case, surrounded only by whitespace/punctuation. */
export function isSilentReply(text: string): boolean {
  return /^[\s\p{P}\p{S}]*no_reply[\s\p{P}\p{S}]*$/iu.test(text);
}

/** Text that merely ends with the token is not silent: the trailing token (and what trails it) is stripped. */
export function stripTrailingSilentToken(text: string): string {
  const stripped = text.replace(/(^|[\s\p{P}\p{S}])no_reply[\s\p{P}\p{S}]*$/iu, "$1");
  return stripped === text ? text : stripped.trimEnd();
}

/** Case, whitespace runs and surrounding punctuation do not make a text different. */
export function normalizeForCompare(text: string): string {
  return text
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, "");
}

/** Below this many (normalized) characters only an exact repeat counts: short texts contain each other by chance. */
export const MIN_DUPLICATE_CHARS = 10;
/** The contained text must be at least this share of the container's length. */
export const MIN_DUPLICATE_SHARE = 0.5;

/**
 * The reference rule for a messaging-tool duplicate: after normalization, one text contains the other, both are at
 * least MIN_DUPLICATE_CHARS long, and the contained one is at least half as long as the container. An exact repeat
 * is a duplicate at any length.
 */
export function isMessagingDuplicate(text: string, sent: string): boolean {
  const a = normalizeForCompare(text);
  const b = normalizeForCompare(sent);
  if (a === "" || b === "") return false;
  if (a === b) return true;
  if (a.length < MIN_DUPLICATE_CHARS || b.length < MIN_DUPLICATE_CHARS) return false;
  const [inner, outer] = a.length <= b.length ? [a, b] : [b, a];
  return outer.includes(inner) && inner.length >= MIN_DUPLICATE_SHARE * outer.length;
}

export interface ShapeReplyInput {
  assistantText: string;
  reasoning?: string;
  includeReasoning?: boolean;
  toolSummaries?: string[];
  verbose?: boolean;
  /** the model call failed: its error becomes visible text */
  modelError?: string;
  toolErrors?: Array<{ name: string; message: string }>;
  /** texts already delivered by a messaging tool during the run */
  messagingSends?: string[];
  /** block streaming already delivered (part of) the reply: a visible reply, so no fallback tool-error reply */
  deliveredByBlocks?: boolean;
}

export function shapeReply(input: ShapeReplyInput): ReplyPayload[] {
  const payloads: ReplyPayload[] = [];
  if (input.includeReasoning && input.reasoning?.trim()) {
    payloads.push({ text: input.reasoning.trim(), kind: "reasoning" });
  }
  if (input.verbose) {
    for (const s of input.toolSummaries ?? []) payloads.push({ text: s, kind: "tool_summary" });
  }
  const sent = input.messagingSends ?? [];
  let text = input.assistantText;
  if (isSilentReply(text)) text = "";
  else text = stripTrailingSilentToken(text);
  if (text.trim() && !sent.some((m) => isMessagingDuplicate(text, m))) payloads.push({ text: text.trim() });
  if (input.modelError) payloads.push({ text: `⚠️ ${input.modelError}`, kind: "error" });

  const visible = payloads.some((p) => p.kind !== "reasoning");
  const messagingDelivered = (input.messagingSends ?? []).some((s) => s.trim() !== "");
  if (!visible && !messagingDelivered && !input.deliveredByBlocks && input.toolErrors?.length) {
    const last = input.toolErrors[input.toolErrors.length - 1];
    const firstLine = last.message.split("\n").find((l) => l.trim()) ?? "failed";
    payloads.push({ text: `⚠️ ${last.name} failed: ${firstLine.slice(0, 300)}`, kind: "error" });
  }
  return payloads;
}
