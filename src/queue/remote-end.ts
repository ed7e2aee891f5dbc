import type { RunRecord } from "../storage/types.js";
import type { QueueContext } from "./types.js";

/**
 * How often a wait for a run on another node reads its record again, in case the end's notice was missed (the bus's
 * end notice is the usual way; this bounds how late a lost one makes the answer). One read per waiter per second.
 */
export const REMOTE_END_POLL_MS = 1000;

/**
 * Waits for a run that is not live in this process (it runs, or waits, on another node, or in another process on
 * this state dir, such as `loopgate agent --local`) to end. The bus's end of the run (a cross-node bus hears it) and
 * a read of its record every REMOTE_END_POLL_MS, whichever comes first: the read makes the wait independent of a
 * lost notification, and is the only way to hear a run of another process on SQLite. Resolves with the ended record, or
 * undefined once `timeoutMs` has passed (Infinity: no bound).
 */
export function waitRemoteEnd(ctx: QueueContext, runId: string, timeoutMs: number): Promise<RunRecord | undefined> {
  const { bus, clock, store } = ctx.deps;
  return new Promise<RunRecord | undefined>((resolve, reject) => {
    let done = false;
    let poll: unknown;
    let limit: unknown;
    const finish = (run: RunRecord | undefined) => {
      if (done) return;
      done = true;
      offEnd();
      clock.clearTimeout(poll);
      clock.clearTimeout(limit);
      resolve(run);
    };
    const check = () => {
      store.getRun(runId).then(
        (run) => {
          if (done) return;
          if (run && run.status !== "queued" && run.status !== "running") finish(run);
          else poll = clock.setTimeout(check, REMOTE_END_POLL_MS);
        },
        (err: unknown) => {
          if (done) return;
          done = true;
          offEnd();
          clock.clearTimeout(limit);
          reject(err);
        },
      );
    };
    // the end event is written before the bus hears it: one read after it finds the ended record
    const offEnd = bus.onRunEnd(runId, () => {
      clock.clearTimeout(poll);
      check();
    });
    if (Number.isFinite(timeoutMs)) limit = clock.setTimeout(() => finish(undefined), Math.max(0, timeoutMs));
    check();
  });
}
