import type { DropPolicy } from "../config/schema.js";
import { dropRun } from "./live-runs.js";
import type { QueueContext, SessionState } from "./types.js";

/** The queue cap (SPEC 2): what a message dropped by `summarize` leaves behind, and the notice turn they become. */

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

/** At the cap: the oldest queued message makes room, summarized into a later notice or simply dropped. */
export function applyCap(ctx: QueueContext, s: SessionState, policy: DropPolicy): void {
  const oldest = s.pending.shift();
  if (!oldest) return;
  if (policy === "summarize") {
    s.overflow.count++;
    s.overflow.summaries.push(summarizeDropped(oldest.req.message));
    dropRun(ctx, oldest, "queue cap reached; summarized into a [Queue overflow] followup");
  } else {
    dropRun(ctx, oldest, "queue cap reached; oldest message dropped");
  }
}
