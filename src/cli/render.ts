import type { AgentEvent } from "../infra/events.js";
import type { VerboseLevel } from "../protocol/enums.js";
import { painter } from "./color.js";

export interface RenderTarget {
  out: (s: string) => void;
  err: (s: string) => void;
  /** colour for what goes to `err` (the tool lines); decided for that stream, not stdout */
  errColor: boolean;
  /** true once the user asked to stop the run (Ctrl-C): a tool cut short then is "aborted", not "failed" */
  aborting?: () => boolean;
  /**
   * How an operator answers the approval `id` (printed under the line that says it waits): a gateway client names
   * the console page and `loopgate approvals allow`; an embedded run asks on the terminal instead and has none.
   */
  approvalHelp?: (id: string) => string[];
  /**
   * `--verbose`: off and on print one summarized line per tool call (the arguments cut to one line, the outcome);
   * full prints each call's whole arguments and result under its line. Events carry them already redacted.
   */
  verbose?: VerboseLevel;
}

/** `text` indented under its tool line, so a long result stays visibly part of that call. */
function indented(text: string): string {
  return `${text
    .replace(/\s+$/, "")
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n")}\n`;
}

/** The whole of a call for --verbose full: its arguments as JSON, then its result text (or its images' notes). */
function fullToolDetail(args: unknown, d: Record<string, unknown>): string {
  const parts: string[] = [];
  if (args !== undefined) parts.push(`args: ${JSON.stringify(args, null, 2)}`);
  if (typeof d.result === "string" && d.result.trim()) parts.push(`result:\n${d.result}`);
  else if (d.result !== undefined && typeof d.result !== "string") parts.push(`result: ${JSON.stringify(d.result)}`);
  return parts.length ? indented(parts.join("\n")) : "";
}

/** One line saying what a tool was asked to do: the command, path, query or URL, else the arguments as JSON. */
export function shortArgs(args: unknown): string {
  if (!args || typeof args !== "object") return "";
  const a = args as Record<string, unknown>;
  const main = a.command ?? a.path ?? a.query ?? a.url;
  const text = typeof main === "string" ? main : JSON.stringify(a);
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > 80 ? `${oneLine.slice(0, 77)}...` : oneLine;
}

function firstLine(text: unknown): string {
  const s = typeof text === "string" ? text : JSON.stringify(text ?? "");
  const line = s.split("\n").find((l) => l.trim()) ?? "";
  return line.length > 100 ? `${line.slice(0, 97)}...` : line;
}

/** exec ends its result with a status line ("exit code 1", "aborted"); the loop marks skipped calls "aborted: …". */
function wasAborted(result: unknown): boolean {
  if (typeof result !== "string") return false;
  const last = result.trimEnd().split("\n").at(-1) ?? "";
  return last === "aborted" || result.startsWith("aborted:");
}

/** The most telling line of a failed tool: its first output line, or its status when it printed nothing. */
function failureLine(result: unknown): string {
  const line = firstLine(result);
  if (line !== "(no output)" || typeof result !== "string") return line;
  return firstLine(result.trimEnd().split("\n").at(-1));
}

function imageNote(image: Record<string, unknown>): string {
  const size =
    typeof image.width === "number" && typeof image.height === "number" ? ` ${image.width}×${image.height}` : "";
  return `${String(image.mimeType)}${size}`;
}

function toolOutcome(d: Record<string, unknown>, aborting: boolean, red: (s: string) => string): string {
  if (d.skipped) return `skipped (${d.skipped})`;
  if (!d.isError) {
    // an image result is described by what was sent (the event carries its size, never its bytes)
    const images = Array.isArray(d.images) ? (d.images as Array<Record<string, unknown>>) : [];
    if (images.length > 0) return `ok (${images.map(imageNote).join(", ")})`;
    return `ok${typeof d.result === "string" ? ` (${d.result.split("\n").length} lines)` : ""}`;
  }
  if (aborting || wasAborted(d.result)) return "aborted";
  return red(`failed: ${failureLine(d.result)}`);
}

/**
 * Terminal rendering of one run: assistant text streams to stdout as it arrives; each tool call becomes one line on
 * stderr with its outcome (so piping stdout captures just the reply). A run that streams blocks (its lifecycle start
 * says so) prints its blocks as they are delivered instead of the deltas, so the text is printed once.
 */
export function createTerminalRenderer(target: RenderTarget): (ev: AgentEvent) => void {
  const { dim, red } = painter(target.errColor);
  const pendingArgs = new Map<string, unknown>();
  let midLine = false;
  /** reasoning is being written to stderr, dimmed, and its line is still open */
  let thinking = false;
  let blocks = false;
  const breakLine = () => {
    if (thinking) {
      target.err("\n");
      thinking = false;
    }
    if (midLine) {
      target.out("\n");
      midLine = false;
    }
  };
  return (ev) => {
    const d = ev.data as Record<string, unknown>;
    if (ev.stream === "lifecycle" && d.phase === "start") blocks = d.blockStreaming !== undefined;
    if (blocks && ev.stream === "assistant") return;
    const note = runNote(ev);
    if (note) {
      breakLine();
      target.err(`${dim(note)}\n`);
      if (ev.stream === "lifecycle" && ev.data.phase === "waiting" && ev.data.for === "approval")
        for (const line of target.approvalHelp?.(ev.data.approvalId) ?? []) target.err(`  ${line}\n`);
    }
    // Reasoning goes to stderr, dimmed and labelled, so piping stdout still captures only the reply.
    if (ev.stream === "thinking") {
      const t = ev.data;
      if (t.delta === "") return;
      if (!thinking || t.text === t.delta) {
        breakLine();
        target.err(dim("💭 "));
      }
      target.err(dim(t.delta));
      thinking = true;
      return;
    }
    // A message the model sent mid-run is part of what the user reads: stdout, as its own paragraph.
    if (ev.stream === "message") {
      breakLine();
      target.out(`${ev.data.text}\n\n`);
      return;
    }
    if ((ev.stream === "assistant" && typeof d.delta === "string") || ev.stream === "block") {
      if (thinking) {
        target.err("\n");
        thinking = false;
      }
      const text = ev.stream === "block" ? ev.data.text : String(d.delta);
      target.out(text);
      midLine = !text.endsWith("\n");
      return;
    }
    if (ev.stream === "tool") {
      const id = String(d.toolCallId);
      // The reply so far ends its line before a tool runs: a status line drawn meanwhile must not overwrite it.
      if (d.phase === "start") {
        breakLine();
        pendingArgs.set(id, d.args);
      }
      if (d.phase === "result") {
        breakLine();
        const fullArgs = pendingArgs.get(id);
        const args = shortArgs(fullArgs);
        pendingArgs.delete(id);
        const outcome = toolOutcome(d, target.aborting?.() === true, red);
        target.err(`${dim("⚙")} ${d.name}${args ? ` ${dim(args)}` : ""} → ${outcome}\n`);
        if (target.verbose === "full") target.err(dim(fullToolDetail(fullArgs, d)));
      }
      return;
    }
    if (ev.stream === "lifecycle" && (d.phase === "end" || d.phase === "error")) breakLine();
  };
}

const fmt = (n: number) => n.toLocaleString("en-US");

/**
 * One stderr line for what the run did besides answering: retries, fallbacks, compactions, a restarted answer, a
 * command waiting for approval (with the id an operator answers with exec.approval.resolve).
 */
export function runNote(ev: AgentEvent): string | undefined {
  if (ev.stream === "assistant" || ev.stream === "block")
    return ev.data.replace ? "↻ the answer restarted; the text above is void" : undefined;
  if (ev.stream === "thinking")
    return ev.data.replace ? "↻ the reasoning restarted; the reasoning above is void" : undefined;
  if (ev.stream === "compaction") {
    const c = ev.data;
    if (c.phase !== "end") return undefined;
    return c.completed
      ? `⧉ compacted the conversation (${c.reason}): about ${fmt(c.tokensBefore)} → ${fmt(c.tokensAfter)} tokens`
      : `⧉ compaction (${c.reason}) did not help: ${c.outcome}`;
  }
  if (ev.stream !== "lifecycle") return undefined;
  const d = ev.data;
  if (d.phase === "retry") {
    return `↻ ${d.model}: ${d.reason}, retry ${d.attempt} in ${(d.delayMs / 1000).toFixed(1)} s`;
  }
  if (d.phase === "fallback") return `↪ ${d.from} failed (${d.reason}); trying ${d.to}`;
  if (d.phase === "auth_rotate") return `⇄ auth profile ${d.from}: ${d.reason}; using ${d.to}`;
  if (d.phase === "waiting" && d.for === "approval") {
    const secs = Math.max(0, Math.round((d.expiresAtMs - ev.ts) / 1000));
    const what =
      d.kind === "tool"
        ? `tool \`${shortArgs({ command: d.command })}\``
        : `exec \`${shortArgs({ command: d.command })}\``;
    const why = d.reason ? `: ${d.reason}` : "";
    const policy = d.sandbox ? `\n  ${d.sandbox.reason}` : "";
    return `⏸ ${what} waits for approval${why}${policy}\n  id ${d.approvalId} · denied unless answered within ${secs} s (by ${clockTime(d.expiresAtMs)})`;
  }
  if (d.phase === "resumed" && d.for === "approval") return approvalOutcome(d.approvalId, d.status, d.decision);
  return undefined;
}

/** One line for how an approval ended, e.g. "✓ approval ap-7 answered: allow-once". */
function approvalOutcome(id: string, status: string, decision: string | undefined): string {
  if (status === "allowed") return `✓ approval ${id} answered: ${decision ?? "allow-once"}`;
  if (status === "denied") return `✗ approval ${id} answered: deny`;
  if (status === "expired") return `✗ approval ${id} expired: nobody answered in time, so it was denied`;
  return `✗ approval ${id} cancelled: the run stopped waiting`;
}

/** "14:03:07" on this machine's clock: when an approval expires, read next to a wall clock. */
function clockTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

export function formatSummary(
  final: {
    status: string;
    summary: string;
    stopReason?: string;
    error?: string;
    result: {
      meta: {
        durationMs: number;
        usage: { input: number; output: number; total: number };
        modelName?: string;
        costUsd?: number;
      };
    };
  },
  opts: { abortedAs?: string } = {},
): string {
  const meta = final.result.meta;
  const u = meta.usage;
  const secs = (meta.durationMs / 1000).toFixed(1);
  const status = final.summary === "aborted" ? (opts.abortedAs ?? "aborted") : final.status;
  const err = final.error && final.status !== "ok" ? ` · ${final.error}` : "";
  const model = meta.modelName ? ` · ${meta.modelName}` : "";
  const cost = meta.costUsd !== undefined ? ` · ~$${formatUsd(meta.costUsd)}` : "";
  return `— ${status}${model} · ${u.total} tokens (in ${u.input} / out ${u.output})${cost} · ${secs} s${err}`;
}

/** Cents for ordinary runs, more digits for tiny ones (a cheap model's short turn costs a fraction of a cent). */
export function formatUsd(usd: number): string {
  if (usd === 0) return "0";
  return usd >= 0.1 ? usd.toFixed(2) : usd.toPrecision(2);
}
