import { queueModes } from "../config/constants.js";
import type { DropPolicy, QueueMode } from "../config/schema.js";

/** Pure pieces of the queue modes (SPEC 2), kept apart from the service so they are trivially testable. */

export const COLLECT_HEADER = "[Queued messages while agent was busy]";

/** The one turn a batch of collected messages becomes. */
export function collectPrompt(texts: string[]): string {
  const blocks = texts.map((t, i) => `---\nQueued #${i + 1}\n${t}`);
  return `${COLLECT_HEADER}\n\n${blocks.join("\n\n")}`;
}

/** ≤160 chars, one line: what a summarize-dropped message leaves behind. */
export function summarizeDropped(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  if (line.length <= 160) return line;
  // Never end on the first half of a surrogate pair (an emoji cut in two is a broken character).
  const head = line.slice(0, 157);
  return `${/[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head}...`;
}

export function overflowPrompt(summaries: string[], droppedCount: number): string {
  const lines = summaries.map((s) => `- ${s}`);
  return `[Queue overflow] Dropped ${droppedCount} messages due to cap.${lines.length ? `\n${lines.join("\n")}` : ""}`;
}

export function isQueueMode(v: unknown): v is QueueMode {
  return typeof v === "string" && (queueModes as readonly string[]).includes(v);
}

/** Per message > session > channel > global (SPEC 2). */
export function resolveQueueMode(input: {
  message?: string;
  session?: string;
  channel?: string;
  byChannel: Record<string, QueueMode>;
  global: QueueMode;
}): QueueMode {
  if (isQueueMode(input.message)) return input.message;
  if (isQueueMode(input.session)) return input.session;
  if (input.channel && isQueueMode(input.byChannel[input.channel])) return input.byChannel[input.channel];
  return input.global;
}

export type { DropPolicy, QueueMode };
