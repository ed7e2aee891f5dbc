import type { AgentEvent } from "../infra/events.js";

export interface RenderTarget {
  out: (s: string) => void;
  err: (s: string) => void;
  color: boolean;
}

function shortArgs(args: unknown): string {
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

/**
 * Terminal rendering of one run: assistant text streams to stdout as it arrives; each tool call becomes one line on
 * stderr with its outcome (so piping stdout captures just the reply).
 */
export function createTerminalRenderer(target: RenderTarget): (ev: AgentEvent) => void {
  const dim = (s: string) => (target.color ? `\x1b[2m${s}\x1b[0m` : s);
  const red = (s: string) => (target.color ? `\x1b[31m${s}\x1b[0m` : s);
  const pendingArgs = new Map<string, unknown>();
  let midLine = false;
  const breakLine = () => {
    if (midLine) {
      target.out("\n");
      midLine = false;
    }
  };
  return (ev) => {
    const d = ev.data as Record<string, unknown>;
    if (ev.stream === "assistant" && typeof d.delta === "string") {
      target.out(d.delta);
      midLine = !d.delta.endsWith("\n");
      return;
    }
    if (ev.stream === "tool") {
      const id = String(d.toolCallId);
      if (d.phase === "start") pendingArgs.set(id, d.args);
      if (d.phase === "result") {
        breakLine();
        const args = shortArgs(pendingArgs.get(id));
        pendingArgs.delete(id);
        const outcome = d.skipped
          ? `skipped (${d.skipped})`
          : d.isError
            ? red(`failed: ${firstLine(d.result)}`)
            : `ok${typeof d.result === "string" ? ` (${d.result.split("\n").length} lines)` : ""}`;
        target.err(`${dim("⚙")} ${d.name}${args ? ` ${dim(args)}` : ""} → ${outcome}\n`);
      }
      return;
    }
    if (ev.stream === "lifecycle" && (d.phase === "end" || d.phase === "error")) breakLine();
  };
}

export function formatSummary(final: {
  status: string;
  summary: string;
  stopReason?: string;
  error?: string;
  result: { meta: { durationMs: number; usage: { input: number; output: number; total: number } } };
}): string {
  const u = final.result.meta.usage;
  const secs = (final.result.meta.durationMs / 1000).toFixed(1);
  const status = final.summary === "aborted" ? "aborted" : final.status;
  const err = final.error && final.status !== "ok" ? ` · ${final.error}` : "";
  return `— ${status} · ${u.total} tokens (in ${u.input} / out ${u.output}) · ${secs} s${err}`;
}
