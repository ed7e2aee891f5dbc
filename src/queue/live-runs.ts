import type { AgentFinal, EndedBy, Receipt } from "../protocol/run.js";
import { endedFinal } from "./finals.js";
import type { QueueMode } from "./modes.js";
import type { Deferred, LiveRun, QueueContext, ResolvedRequest, RunOrigin, SessionState } from "./types.js";

/** Bookkeeping of accepted messages that have not ended: creating them, giving receipts, ending them. */

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Registers a message that waits in its session queue. */
export function addLiveRun(
  ctx: QueueContext,
  init: {
    runId: string;
    sessionKey: string;
    req: ResolvedRequest;
    mode: QueueMode;
    acceptedAt: number;
    origin?: RunOrigin;
    receipt?: Receipt;
    committed?: Promise<void>;
  },
): LiveRun {
  const run: LiveRun = { ...init, phase: "pending", done: deferred() };
  ctx.live.set(run.runId, run);
  return run;
}

/** The session's queue state, created empty on first use. */
export function sessionState(ctx: QueueContext, key: string): SessionState {
  const existing = ctx.sessions.get(key);
  if (existing) return existing;
  const s: SessionState = {
    key,
    pending: [],
    overflow: { count: 0, summaries: [] },
    lastEnqueueAt: 0,
    immediate: false,
    generation: ++ctx.generations,
    processingSince: ctx.deps.clock.now(),
  };
  ctx.sessions.set(key, s);
  return s;
}

/**
 * Runs `then` once `write` has settled: an event about a row goes out only after the row is stored. A failed write
 * (the disk is full) is reported and `then` still runs, so no waiter hangs; recovery fixes the record later.
 */
export function afterWrite(write: Promise<unknown>, then: () => void): void {
  write.then(then, (err: unknown) => {
    process.emitWarning(`a queue record could not be written: ${(err as Error)?.message ?? String(err)}`);
    then();
  });
}

export function setReceipt(ctx: QueueContext, run: LiveRun, receipt: Receipt): void {
  run.receipt = receipt;
  const write = ctx.deps.store.updateRun(run.runId, { receipt: receipt as unknown as Record<string, unknown> });
  afterWrite(write, () => ctx.deps.bus.emit(run.runId, run.sessionKey, "queue", { receipt }));
}

/** The receipt the run's record already holds: kept in memory and sent as its `queue` event, nothing written. */
export function announceReceipt(ctx: QueueContext, run: LiveRun, receipt: Receipt): void {
  run.receipt = receipt;
  ctx.deps.bus.emit(run.runId, run.sessionKey, "queue", { receipt });
}

export function finishRun(ctx: QueueContext, run: LiveRun, final: AgentFinal): void {
  ctx.live.delete(run.runId);
  ctx.deps.bus.endRun(run.runId);
  run.done.resolve(final);
}

/**
 * Ends a message that will never run, with its reason, in the store, as an event and for waiters. `endedBy`: the
 * in-band control of another message that dropped it (its sender sees who and with what).
 */
export function dropRun(
  ctx: QueueContext,
  run: LiveRun,
  reason: string,
  summary: AgentFinal["summary"] = "failed",
  endedBy?: EndedBy,
): void {
  const { store, bus, clock } = ctx.deps;
  const now = clock.now();
  const aborted = summary === "aborted";
  const final = endedFinal(run.runId, summary, aborted ? "aborted" : "dropped", reason, endedBy);
  const receipt: Receipt = { kind: "dropped", reason };
  run.receipt = receipt;
  // gone from the live runs at once (a repeated key is answered from the record), ended once the record is written
  ctx.live.delete(run.runId);
  const write = store.updateRun(run.runId, {
    status: aborted ? "aborted" : "error",
    endedAt: now,
    stopReason: final.stopReason,
    error: reason,
    result: final as unknown as Record<string, unknown>,
    receipt: receipt as unknown as Record<string, unknown>,
  });
  afterWrite(write, () => {
    bus.emit(run.runId, run.sessionKey, "queue", { receipt });
    bus.emit(run.runId, run.sessionKey, "lifecycle", {
      phase: "error",
      endedAt: now,
      status: aborted ? "aborted" : "error",
      stopReason: final.stopReason ?? "dropped",
      error: reason,
      kind: aborted ? "aborted" : "dropped",
      ...(endedBy ? { endedBy } : {}),
    });
    finishRun(ctx, run, final);
  });
}
