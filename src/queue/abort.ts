import { dropRun } from "./live-runs.js";
import type { LiveRun, QueueContext } from "./types.js";

/** chat.abort: queued turns of the session first, then the active run (or only `runId`). Returns what ended. */
export function abortSession(ctx: QueueContext, sessionKey: string, runId?: string): string[] {
  const aborted: string[] = [];
  const s = ctx.sessions.get(sessionKey);
  if (!s) return aborted;
  const match = (r: LiveRun) => runId === undefined || r.runId === runId;
  const end = (queue: LiveRun[]) => {
    for (const r of queue.filter(match)) {
      queue.splice(queue.indexOf(r), 1);
      dropRun(ctx, r, "aborted by request", "aborted");
      aborted.push(r.runId);
    }
  };
  // The [Queue overflow] notice is a queued turn too; without this it would still run after the abort.
  if (runId === undefined) s.overflow = { count: 0, summaries: [] };
  end(s.pending);
  if (s.active) {
    end(s.active.steer);
    if (match(s.active.host)) {
      s.active.host.controller?.abort(new Error("aborted by request"));
      aborted.push(s.active.host.runId);
    }
  }
  ctx.schedule(s);
  return aborted;
}
