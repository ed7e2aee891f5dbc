import { isSameLiveProcess } from "../infra/process-liveness.js";
import type { RunRecord } from "../storage/types.js";
import { endedFinal } from "./finals.js";
import { originOfRecord } from "./intake.js";
import { addLiveRun, sessionState } from "./live-runs.js";
import type { QueueContext, ResolvedRequest } from "./types.js";

/**
 * After a crash or restart: runs that were active are failed with stopReason "gateway_restart" (their input is
 * in the run record and the transcript); queued inputs go back into their session queues in accepted order.
 * Runs of another live process (and of this one) are left alone.
 */
export async function recoverRuns(ctx: QueueContext): Promise<{ failed: string[]; requeued: string[] }> {
  // Several nodes share the store: every other `running` run may be a live node's. Only a dead node's runs are
  // failed (node_lost), by the takeover watcher; queued inputs are adopted by lease holders (src/cluster/).
  if (ctx.cluster) return ctx.cluster.recover();
  const { store } = ctx.deps;
  // ends this process could not record yet are written first: a record still `queued` would be run again
  await ctx.unrecorded.flush();
  const leftover = (run: RunRecord) =>
    !ctx.live.has(run.runId) && !ctx.unrecorded.has(run.runId) && !ownedByLiveProcess(run);
  const failed = (await store.listRuns({ statuses: ["running"] })).filter(leftover);
  for (const run of failed) await failInterrupted(ctx, run);
  const requeued = (await store.listRuns({ statuses: ["queued"] })).filter(leftover);
  for (const rec of requeued) await requeue(ctx, rec);
  for (const s of ctx.sessions.values()) ctx.schedule(s);
  return { failed: failed.map((r) => r.runId), requeued: requeued.map((r) => r.runId) };
}

/**
 * A run accepted by another process that is still alive (e.g. a `loopgate agent --local` beside the gateway) is
 * that process's to finish, not a crash leftover. Same pid with a different start time is a recycled pid: dead.
 */
function ownedByLiveProcess(run: RunRecord): boolean {
  const owner = (run.params as { owner?: { pid?: number; starttime?: string | null } }).owner;
  if (!owner?.pid || owner.pid === process.pid) return false;
  return isSameLiveProcess({ pid: owner.pid, starttime: owner.starttime });
}

/**
 * A run that did not run to its end (a restart, a lost node): its record (error, with the reason and a final for
 * waiters), then its lifecycle error event, numbered after the last event stored for it (the stored events are the
 * source of truth for the run's numbering, whichever process wrote them).
 */
export async function reportEnded(
  ctx: QueueContext,
  run: RunRecord,
  ended: { stopReason: string; error: string },
): Promise<void> {
  const { store, bus, clock } = ctx.deps;
  const now = clock.now();
  const final = endedFinal(run.runId, "failed", ended.stopReason, ended.error);
  bus.resumeSeq(run.runId, await store.lastRunEventSeq(run.runId));
  const origin = originOfRecord(run);
  if (origin) ctx.recoveredOrigins.set(run.runId, origin);
  await store.updateRun(run.runId, {
    status: "error",
    endedAt: now,
    stopReason: ended.stopReason,
    error: ended.error,
    result: final as unknown as Record<string, unknown>,
  });
  bus.emit(run.runId, run.sessionKey, "lifecycle", {
    phase: "error",
    endedAt: now,
    status: "error",
    stopReason: ended.stopReason,
    error: ended.error,
    kind: ended.stopReason,
  });
  bus.endRun(run.runId);
}

const INTERRUPTED_ERROR = "the gateway stopped while this run was active (it did not finish); send the message again";

/**
 * How a run the gateway was running when it stopped is ended: what recovery writes at the next start, and what
 * `storage migrate` writes for such a run of a crashed SQLite state (no start on SQLite will come to end it).
 */
export function interruptedEnd(runId: string): { stopReason: string; error: string; result: Record<string, unknown> } {
  const stopReason = "gateway_restart";
  const final = endedFinal(runId, "failed", stopReason, INTERRUPTED_ERROR);
  return { stopReason, error: INTERRUPTED_ERROR, result: final as unknown as Record<string, unknown> };
}

function failInterrupted(ctx: QueueContext, run: RunRecord): Promise<void> {
  return reportEnded(ctx, run, { stopReason: "gateway_restart", error: INTERRUPTED_ERROR });
}

async function requeue(ctx: QueueContext, rec: RunRecord): Promise<void> {
  const req = rec.params as unknown as ResolvedRequest;
  const mode = req.queueMode === "collect" ? "collect" : "followup";
  const origin = originOfRecord(rec);
  const run = addLiveRun(ctx, {
    runId: rec.runId,
    sessionKey: rec.sessionKey,
    req,
    mode,
    acceptedAt: rec.acceptedAt,
    ...(origin ? { origin } : {}),
  });
  // its receipt was numbered and stored before the restart: the run goes on after the last stored seq
  ctx.deps.bus.resumeSeq(rec.runId, await ctx.deps.store.lastRunEventSeq(rec.runId));
  const s = sessionState(ctx, rec.sessionKey);
  s.pending.push(run);
  s.immediate = true;
}
