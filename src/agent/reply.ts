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

function normalizeForCompare(text: string): string {
  return text.replace(/\s+/g, " ").trim().toLowerCase();
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
}

export function shapeReply(input: ShapeReplyInput): ReplyPayload[] {
  const payloads: ReplyPayload[] = [];
  if (input.includeReasoning && input.reasoning?.trim()) {
    payloads.push({ text: input.reasoning.trim(), kind: "reasoning" });
  }
  if (input.verbose) {
    for (const s of input.toolSummaries ?? []) payloads.push({ text: s, kind: "tool_summary" });
  }
  const sent = new Set((input.messagingSends ?? []).map(normalizeForCompare));
  let text = input.assistantText;
  if (isSilentReply(text)) text = "";
  else text = stripTrailingSilentToken(text);
  if (text.trim() && !sent.has(normalizeForCompare(text))) payloads.push({ text: text.trim() });
  if (input.modelError) payloads.push({ text: `⚠️ ${input.modelError}`, kind: "error" });

  const visible = payloads.some((p) => p.kind !== "reasoning");
  const messagingDelivered = (input.messagingSends ?? []).some((s) => s.trim() !== "");
  if (!visible && !messagingDelivered && input.toolErrors?.length) {
    const last = input.toolErrors[input.toolErrors.length - 1];
    const firstLine = last.message.split("\n").find((l) => l.trim()) ?? "failed";
    payloads.push({ text: `⚠️ ${last.name} failed: ${firstLine.slice(0, 300)}`, kind: "error" });
  }
  return payloads;
}
