import { enqueue, ORIGIN_PARAM, receiptOf, routeOf } from "./intake.js";
import { addLiveRun, announceReceipt, sessionState, setReceipt } from "./live-runs.js";
import type { AdoptedRun, QueueContext, ResolvedRequest } from "./types.js";

/**
 * Inputs this node adopted (several nodes on Postgres, src/cluster/): each joins its session's local queue as if it
 * had arrived here, in the order given (acceptance order), so queue modes apply as usual: steered into the running
 * turn while it takes messages, collected, queued as a followup, or an interrupt. Its receipt is re-issued from here
 * (stored, then sent as a `queue` event numbered after the events already stored for the run).
 *
 * An input already live in this process (an overflow notice this node made, adopted back) is skipped: nothing runs
 * twice. Returns how many joined.
 */
export function adoptRuns(ctx: QueueContext, runs: readonly AdoptedRun[]): number {
  let joined = 0;
  for (const input of runs) {
    if (ctx.live.has(input.runId)) continue;
    const req = input.params as unknown as ResolvedRequest;
    const s = sessionState(ctx, input.sessionKey);
    const route = routeOf(ctx, req, input.sessionQueueMode, s);
    const origin = input.params[ORIGIN_PARAM] as { actor?: unknown } | undefined;
    const run = addLiveRun(ctx, {
      runId: input.runId,
      sessionKey: input.sessionKey,
      req,
      mode: route.mode,
      acceptedAt: input.acceptedAt,
      ...(typeof origin?.actor === "string" ? { origin: { actor: origin.actor } } : {}),
    });
    ctx.deps.bus.resumeSeq(run.runId, input.lastEventSeq);
    s.lastEnqueueAt = ctx.deps.clock.now();
    const receipt = receiptOf(ctx, route, s, { message: req.message, origin: run.origin });
    // the usual case, adopted where it was accepted with nothing changed between: the stored receipt stands
    if (input.storedReceipt === JSON.stringify(receipt)) announceReceipt(ctx, run, receipt);
    else setReceipt(ctx, run, receipt);
    // a turn launched by this enqueue starts from the row read with the input; a later one reads it then
    if (input.session) run.adoptedSession = input.session;
    enqueue(ctx, s, run, route);
    run.adoptedSession = undefined;
    joined++;
  }
  return joined;
}
