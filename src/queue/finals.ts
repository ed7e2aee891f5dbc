import type { AgentFinal, EndedBy, Usage, WaitResult, WireStatus } from "../protocol/run.js";
import type { RunRecord, RunStatus } from "../storage/types.js";
import type { RunResult } from "./types.js";

/** The wire answers (final result, wait result) built from a turn's outcome or a stored run record. */

export function zeroUsage(): Usage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
}

function wireStatus(status: RunStatus): WireStatus {
  return status === "ok" ? "ok" : status === "timeout" ? "timeout" : "error";
}

function summaryOf(status: RunStatus): AgentFinal["summary"] {
  return status === "ok" ? "completed" : status === "aborted" ? "aborted" : "failed";
}

export function toFinal(r: RunResult): AgentFinal {
  return {
    runId: r.runId,
    status: wireStatus(r.status),
    summary: summaryOf(r.status),
    stopReason: r.stopReason,
    result: {
      payloads: r.payloads,
      meta: {
        durationMs: r.durationMs,
        usage: r.usage,
        model: r.model,
        ...(r.modelName ? { modelName: r.modelName } : {}),
        ...(r.costUsd !== undefined ? { costUsd: r.costUsd } : {}),
        ...(r.authProfile ? { authProfile: r.authProfile } : {}),
        laneWaitMs: r.laneWaitMs,
        steps: r.steps,
      },
    },
    ...(r.error ? { error: r.error.message } : {}),
    ...(r.endedBy ? { endedBy: r.endedBy } : {}),
  };
}

/** The final of a message that ended without running (dropped, aborted while queued, failed by a restart). */
export function endedFinal(
  runId: string,
  summary: AgentFinal["summary"],
  stopReason: string,
  error: string,
  endedBy?: EndedBy,
): AgentFinal {
  return {
    runId,
    status: "error",
    summary,
    stopReason,
    result: { payloads: [], meta: { durationMs: 0, usage: zeroUsage() } },
    error,
    ...(endedBy ? { endedBy } : {}),
  };
}

export function finalFromRecord(run: RunRecord): AgentFinal | undefined {
  if (run.status === "queued" || run.status === "running") return undefined;
  if (run.result) return run.result as unknown as AgentFinal;
  return {
    runId: run.runId,
    status: wireStatus(run.status),
    summary: summaryOf(run.status),
    stopReason: run.stopReason,
    result: {
      payloads: [],
      meta: { durationMs: (run.endedAt ?? 0) - (run.startedAt ?? run.acceptedAt), usage: zeroUsage() },
    },
    ...(run.error ? { error: run.error } : {}),
  };
}

export function waitResultOf(run: RunRecord): WaitResult {
  if (run.status === "queued") return { runId: run.runId, status: "pending" };
  if (run.status === "running") return { runId: run.runId, status: "timeout", startedAt: run.startedAt };
  return {
    runId: run.runId,
    status: wireStatus(run.status),
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    ...(run.error ? { error: run.error } : {}),
    ...(run.stopReason ? { stopReason: run.stopReason } : {}),
    ...fromFinal(run),
  };
}

/**
 * From the stored final: the model that answered (it names the fallback when one answered), and who ended the run
 * with in-band control.
 */
function fromFinal(run: RunRecord): { model?: string; endedBy?: EndedBy } {
  const final = finalFromRecord(run);
  const model = final?.result.meta.model;
  return { ...(model ? { model } : {}), ...(final?.endedBy ? { endedBy: final.endedBy } : {}) };
}
