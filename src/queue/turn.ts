import type { ImageBlock, UserMessage } from "../providers/types.js";
import { toFinal, zeroUsage } from "./finals.js";
import { afterWrite, finishRun, setReceipt } from "./live-runs.js";
import type { ActiveTurn, LiveRun, QueueContext, RunResult, RunSpec, SessionState, TurnSteering } from "./types.js";
import { wireRunOptions } from "./types.js";
import { attachmentImages, userContent } from "./user-content.js";

/** One turn of a session: its host message runs through the run port; merged messages share its outcome. */

/** Starts the host run of a turn and returns at once; when it ends, the session's next turn is scheduled. */
export function launchTurn(
  ctx: QueueContext,
  s: SessionState,
  host: LiveRun,
  merged: LiveRun[],
  message: string,
): void {
  const controller = new AbortController();
  host.controller = controller;
  host.phase = "queued";
  const lanes = new AbortController();
  const turn: ActiveTurn = {
    host,
    steer: [],
    merged: [...merged],
    steerable: true,
    releaseLanes: () => lanes.abort(),
  };
  s.active = turn;
  s.generation = ++ctx.generations;
  s.processingSince = ctx.deps.clock.now();
  void (async () => {
    const outcome = await runHost(ctx, turn, {
      ...turnSpec(ctx, turn, message, controller.signal),
      releaseLanes: lanes.signal,
    });
    turn.steerable = false;
    // stuck-session recovery released the session around this turn and ended its runs: the session may be
    // running a newer turn by now, which this late end must not touch
    if (turn.released) return;
    try {
      await recordOutcome(ctx, turn, outcome);
    } finally {
      // even when the store refused the outcome, the session must not stay blocked behind this turn
      if (s.active === turn) {
        s.active = undefined;
        // what is left queued is a new processing generation: the idle session waiting for its next turn
        s.generation = ++ctx.generations;
        s.processingSince = ctx.deps.clock.now();
      }
      requeueLateSteers(ctx, s, turn);
      ctx.schedule(s);
    }
  })().catch((err) => reportUnrecorded(err));
}

/**
 * The end of a turn could not be written (the disk is full): it is kept in memory until the store takes it
 * (unrecorded-ends.ts). The process must not die of it.
 */
function reportUnrecorded(err: unknown): void {
  process.emitWarning(`a turn's end could not be recorded: ${(err as Error)?.message ?? String(err)}`);
}

function imagesOf(runs: LiveRun[]): { images?: ImageBlock[] } {
  const images = runs.flatMap((r) => attachmentImages(r.req));
  return images.length > 0 ? { images } : {};
}

/** The run port's argument: the host's options, plus the hooks through which the turn reports back. */
function turnSpec(ctx: QueueContext, turn: ActiveTurn, message: string, signal: AbortSignal): RunSpec {
  const { host } = turn;
  return {
    runId: host.runId,
    sessionKey: host.sessionKey,
    agentId: host.req.agentId,
    message,
    ...imagesOf([host, ...turn.merged]),
    ...wireRunOptions(host.req),
    // whose token started the turn: its spend counts against that token's budgets (limits/)
    ...(host.origin?.token !== undefined ? { token: host.origin.token } : {}),
    signal,
    ...(host.adoptedSession ? { session: host.adoptedSession } : {}),
    steering: steeringFor(ctx, turn),
    onLoopEnd: () => {
      turn.steerable = false;
    },
    recordEnd: async (outcome, rows) => {
      // released by stuck-session recovery: its runs were ended by the recovery (see launchTurn)
      if (turn.released) return undefined;
      const stored = await ctx.deps.store.appendTranscriptAndEnd(rows, turnEnd(turn, outcome));
      turn.recordedEnd = outcome;
      return stored;
    },
    onStarted: ({ startedAt }) => {
      host.phase = "running";
      for (const r of [host, ...turn.merged]) r.startedAt = startedAt;
      // Collected messages run inside this turn from now on, so a restart must report them with the host
      // instead of running them a second time (as steered messages are, once taken).
      return ctx.deps.store.updateRuns(
        [host, ...turn.merged].map((r) => ({ runId: r.runId, patch: { status: "running" as const, startedAt } })),
      );
    },
  };
}

/** Hands steered messages to the running loop; once taken they are part of this turn. */
function steeringFor(ctx: QueueContext, turn: ActiveTurn): TurnSteering {
  return {
    pending: () => turn.steerable && turn.steer.length > 0,
    take: () => {
      const taken = turn.steer.splice(0);
      const now = ctx.deps.clock.now();
      for (const r of taken) r.startedAt = now;
      turn.merged.push(...taken);
      // issued now, in order with the run's other writes; the loop does not wait for it (a failure is reported, and
      // the next start's recovery ends a record left queued)
      afterWrite(
        ctx.deps.store.updateRuns(
          taken.map((r) => ({ runId: r.runId, patch: { status: "running" as const, startedAt: now } })),
        ),
        () => {},
      );
      return taken.map(
        (r): UserMessage => ({ role: "user", content: userContent(r.req.message, attachmentImages(r.req)) }),
      );
    },
  };
}

async function runHost(ctx: QueueContext, turn: ActiveTurn, spec: RunSpec): Promise<RunResult> {
  try {
    // a run the queue made itself (an overflow notice) starts once its record is stored
    if (turn.host.committed) await turn.host.committed;
    return await ctx.deps.runTurn(spec);
  } catch (err) {
    // The run port never throws by contract; if it does, the run still ends recorded.
    const now = ctx.deps.clock.now();
    return {
      runId: turn.host.runId,
      sessionKey: turn.host.sessionKey,
      status: "error",
      stopReason: "error",
      payloads: [],
      usage: zeroUsage(),
      startedAt: now,
      endedAt: now,
      durationMs: 0,
      laneWaitMs: 0,
      steps: 0,
      model: "",
      error: { message: (err as Error)?.message ?? String(err), kind: "unknown" },
    };
  }
}

/** The turn's end: the host's and every merged message's record, and the turn's tokens for its session. */
function turnEnd(turn: ActiveTurn, outcome: RunResult) {
  const { host, merged } = turn;
  const final = toFinal(outcome);
  const record = {
    status: outcome.status,
    startedAt: outcome.startedAt,
    endedAt: outcome.endedAt,
    stopReason: outcome.stopReason,
    error: outcome.error?.message,
  };
  const mergedFinal = (m: LiveRun) => ({ ...final, runId: m.runId, mergedInto: host.runId });
  const patches = [
    { runId: host.runId, patch: { ...record, result: final as unknown as Record<string, unknown> } },
    ...merged.map((m) => ({
      runId: m.runId,
      patch: { ...record, result: mergedFinal(m) as unknown as Record<string, unknown> },
    })),
  ];
  // the turn's tokens go to its session in the same transaction: a turn's end is one commit
  const usage = {
    sessionKey: host.sessionKey,
    input: outcome.usage.input,
    output: outcome.usage.output,
    total: outcome.usage.total,
    updatedAt: outcome.endedAt,
  };
  return { patches, usage, final, mergedFinal };
}

/**
 * Stores the outcome for the host and every merged message in one commit (unless the run wrote it with its answer),
 * then resolves their waiters.
 */
export async function recordOutcome(ctx: QueueContext, turn: ActiveTurn, outcome: RunResult): Promise<void> {
  const { host, merged } = turn;
  const { patches, usage, final, mergedFinal } = turnEnd(turn, outcome);
  try {
    // an outcome other than the recorded one (the run failed after writing it) is written over it, as before
    if (turn.recordedEnd !== outcome) await ctx.deps.store.updateRuns(patches, usage);
  } catch (err) {
    try {
      await recordFailedWithoutResult(ctx, [host, ...merged], outcome.endedAt, err);
    } catch (again) {
      // not even that fits: the ends wait in memory until the store takes them (before any restart's recovery
      // could take a record still `queued` for work to run again), and agent.wait reads them meanwhile
      ctx.unrecorded.keep(patches);
      reportUnrecorded(again);
    }
  } finally {
    // waiters get the outcome either way; an unrecorded one is failed by the next start's recovery
    finishRun(ctx, host, final);
    for (const m of merged) finishRun(ctx, m, mergedFinal(m));
  }
}

/**
 * The outcome did not fit (the disk is full): a record without the result needs no new space in most cases, so
 * the runs are at least recorded as failed with the reason. If even that fails, the error goes up.
 */
async function recordFailedWithoutResult(
  ctx: QueueContext,
  runs: LiveRun[],
  endedAt: number,
  cause: unknown,
): Promise<void> {
  const error = (cause as Error)?.message ?? String(cause);
  await ctx.deps.store.updateRuns(
    runs.map((r) => ({ runId: r.runId, patch: { status: "error" as const, endedAt, stopReason: "error", error } })),
  );
}

/** Steered too late: the run could no longer take them, so they become followups, first in line. */
export function requeueLateSteers(ctx: QueueContext, s: SessionState, turn: ActiveTurn): void {
  if (turn.steer.length === 0) return;
  const late = turn.steer.splice(0);
  s.pending.unshift(...late);
  late.forEach((r, i) => {
    r.phase = "pending";
    r.mode = "followup";
    setReceipt(ctx, r, { kind: "queued", position: i + 1, mode: "followup" });
  });
}
