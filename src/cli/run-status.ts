import type { AgentEvent } from "../infra/events.js";
import type { LifecycleData, ToolData } from "../protocol/agent-events.js";
import { shortArgs } from "./render.js";
import type { StatusText } from "./status-line.js";

/** Where the tracker shows what the run waits for (a StatusLine, or a recorder in tests). */
export interface StatusSink {
  show(text: StatusText): void;
  hide(): void;
}

/** "2.1 s" below a minute, then "1 m 05 s". */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const whole = Math.floor(s);
  return `${Math.floor(whole / 60)} m ${String(whole % 60).padStart(2, "0")} s`;
}

const waitingFor =
  (what: string): StatusText =>
  (ms) =>
    `waiting for ${what} · ${formatElapsed(ms)}`;

/** "1 m 47 s left" of an approval that expires `leftMs` after the status line showed it */
const approvalCountdown =
  (what: string, leftMs: number): StatusText =>
  (ms) =>
    `waiting for approval of \`${what}\` · ${formatElapsed(leftMs - ms)} left`;

const toolRunning =
  (name: string, args: string): StatusText =>
  (ms) =>
    `⚙ ${name}${args ? ` \`${args}\`` : ""} · running ${formatElapsed(ms)}`;

/**
 * Derives "what the run is waiting for" from its events, so the embedded and the gateway path show the same:
 * queue receipt → lane; lifecycle start, a tool result or the lock acquired → the model; tool start → that tool;
 * lifecycle waiting/session_lock → the lock holder; waiting/approval → the command an operator must approve, with the
 * time left. Text streaming or the run's end clears the line.
 *
 * While an approval is open nothing else is drawn: with `promptsForApproval` the line stays hidden (the question is
 * on the terminal's last line and a redraw would erase it), else it shows the countdown. Lifecycle resumed/approval
 * ends that, and the line shows what the run does next (the tool, once allowed).
 */
export function trackRunStatus(
  sink: StatusSink,
  opts: { promptsForApproval?: boolean } = {},
): (ev: Pick<AgentEvent, "stream" | "data">) => void {
  let model = "the model";
  const running = new Map<string, StatusText>();
  /** the open approval's id, and what to show once it ends */
  let approval: { id: string; next: StatusText | undefined } | undefined;
  const show = (text: StatusText) => {
    if (approval) approval.next = text;
    else sink.show(text);
  };
  const waitForModel = () => show(waitingFor(model));
  const onTool = (d: ToolData) => {
    if (d.phase === "start") {
      const text = toolRunning(d.name, shortArgs(d.args));
      running.set(d.toolCallId, text);
      show(text);
    } else if (d.phase === "result") {
      running.delete(d.toolCallId);
      const other = [...running.values()].at(-1);
      if (other) show(other);
      else waitForModel();
    }
  };
  let ts = 0;
  const onLifecycle = (d: LifecycleData) => {
    if ("model" in d && d.model) model = d.model;
    if (d.phase === "fallback") model = d.to;
    if (d.phase === "start" || d.phase === "fallback") waitForModel();
    else if (d.phase === "retry") show(waitingFor(`${model} (retry ${d.attempt}: ${d.reason})`));
    else if (d.phase === "waiting" && d.for === "session_lock") {
      const holder = d.holderPid !== undefined ? `pid ${d.holderPid}` : "another process";
      show(waitingFor(`session lock held by ${holder}`));
    } else if (d.phase === "waiting" && d.for === "approval") {
      // what showed before (the tool's "running") is what the run does once allowed
      const next = [...running.values()].at(-1);
      approval = undefined;
      // the terminal prompt asks the question itself; a redrawn status line would overwrite it
      if (opts.promptsForApproval) sink.hide();
      else sink.show(approvalCountdown(shortArgs({ command: d.command }), d.expiresAtMs - ts));
      approval = { id: d.approvalId, next };
    } else if (d.phase === "resumed" && d.for === "approval") {
      if (approval?.id !== d.approvalId) return;
      const next = approval.next;
      approval = undefined;
      if (next) sink.show(next);
      else waitForModel();
    } else if (d.phase === "waiting") waitForModel();
    else if (d.phase === "end" || d.phase === "error") {
      approval = undefined;
      sink.hide();
    }
  };
  return (ev) => {
    const e = ev as AgentEvent;
    // the countdown runs from the event's time (the gateway's clock) when it is known
    ts = typeof e.ts === "number" ? e.ts : Date.now();
    if (e.stream === "queue") {
      const receipt = e.data.receipt;
      if (receipt?.kind === "queued") show(waitingFor(`a lane (queued, position ${receipt.position})`));
      else if (receipt?.kind === "started") show(waitingFor("a lane"));
    } else if (e.stream === "assistant") {
      if (e.data.delta && !approval) sink.hide();
    } else if (e.stream === "tool") onTool(e.data);
    else if (e.stream === "lifecycle") onLifecycle(e.data);
  };
}
