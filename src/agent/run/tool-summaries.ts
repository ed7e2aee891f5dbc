import type { VerboseLevel } from "../../protocol/enums.js";
import { capText, omitInlineDataUrls, redactSecrets, redactText } from "../../tools/sanitize.js";

/**
 * Verbose mode (SPEC 9): one line per tool call, e.g. `🔧 exec: ls -la` or `📖 read: src/a.ts`; in `full` the
 * line is followed by the tool's result. Args and results are redacted exactly as in tool events, and capped, since
 * these lines go to the user as reply payloads.
 */

/** A summary line's detail: long commands and paths are cut so one call stays one line. */
export const SUMMARY_DETAIL_MAX = 160;
/** The result shown under a summary in `full` mode. */
export const SUMMARY_RESULT_MAX = 1200;

const ICONS: Record<string, string> = { exec: "🔧", read: "📖", write: "✍️", edit: "📝", message: "💬" };

/** The argument a person recognises a call by: the command, the path, the text; else the args as compact JSON. */
function detailOf(name: string, args: Record<string, unknown>): string {
  const pick = (key: string) => (typeof args[key] === "string" ? (args[key] as string) : undefined);
  const named = name === "exec" ? pick("command") : name === "message" ? pick("text") : pick("path");
  const raw = named ?? (Object.keys(args).length ? JSON.stringify(args) : "");
  const oneLine = raw.replace(/\s+/g, " ").trim();
  return oneLine.length > SUMMARY_DETAIL_MAX ? `${oneLine.slice(0, SUMMARY_DETAIL_MAX - 1)}…` : oneLine;
}

export interface ToolCallSummaryInput {
  name: string;
  args: Record<string, unknown>;
  isError: boolean;
  result: string;
}

export function summarizeToolCall(call: ToolCallSummaryInput, level: Exclude<VerboseLevel, "off">): string {
  const icon = ICONS[call.name] ?? "🧩";
  const detail = detailOf(call.name, redactSecrets(call.args));
  const head = `${call.isError ? "⚠️" : icon} ${call.name}${detail ? `: ${detail}` : ""}`;
  if (level !== "full") return head;
  const result = capText(redactText(omitInlineDataUrls(call.result)).trim(), SUMMARY_RESULT_MAX);
  return result ? `${head}\n${result}` : head;
}
