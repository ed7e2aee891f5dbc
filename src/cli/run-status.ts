import type { AgentEvent } from "../infra/events.js";
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

const toolRunning =
  (name: string, args: string): StatusText =>
  (ms) =>
    `⚙ ${name}${args ? ` \`${args}\`` : ""} · running ${formatElapsed(ms)}`;

/**
 * Derives "what the run is waiting for" from its events, so the embedded and the gateway path show the same:
 * queue receipt → lane; lifecycle start, a tool result or the lock acquired → the model; tool start → that tool;
 * lifecycle waiting/session_lock → the lock holder. Text streaming or the run's end clears the line.
 */
export function trackRunStatus(sink: StatusSink): (ev: Pick<AgentEvent, "stream" | "data">) => void {
  let model = "the model";
  const running = new Map<string, StatusText>();
  const waitForModel = () => sink.show(waitingFor(model));
  return (ev) => {
    const d = ev.data;
    if (ev.stream === "queue") {
      const receipt = d.receipt as { kind?: string; position?: number } | undefined;
      if (receipt?.kind === "queued") sink.show(waitingFor(`a lane (queued, position ${receipt.position ?? "?"})`));
      else if (receipt?.kind === "started") sink.show(waitingFor("a lane"));
      return;
    }
    if (ev.stream === "assistant") {
      if (typeof d.delta === "string" && d.delta !== "") sink.hide();
      return;
    }
    if (ev.stream === "tool") {
      const id = String(d.toolCallId);
      if (d.phase === "start") {
        const text = toolRunning(String(d.name), shortArgs(d.args));
        running.set(id, text);
        sink.show(text);
      } else if (d.phase === "result") {
        running.delete(id);
        const other = [...running.values()].at(-1);
        if (other) sink.show(other);
        else waitForModel();
      }
      return;
    }
    if (ev.stream !== "lifecycle") return;
    if (typeof d.model === "string" && d.model) model = d.model;
    if (d.phase === "start") waitForModel();
    else if (d.phase === "waiting" && d.for === "session_lock") {
      const holder = typeof d.holderPid === "number" ? `pid ${d.holderPid}` : "another process";
      sink.show(waitingFor(`session lock held by ${holder}`));
    } else if (d.phase === "waiting") waitForModel();
    else if (d.phase === "end" || d.phase === "error") sink.hide();
  };
}
