import type { RunRecord } from "../../agent/session-service.js";
import { runsListParamsSchema } from "../../protocol/params.js";
import type { RunInfo, RunsListResult } from "../../protocol/payloads.js";
import type { AgentFinal } from "../../protocol/run.js";
import { defineMethod } from "../context.js";

/** runs per answer when the caller gives no limit */
const DEFAULT_RUNS_LIMIT = 50;
/** records read per pass when the token's sessions filter some out */
const READ_FACTOR = 4;

/** Metadata of a run record: status, times, model, tokens; never the message or the reply. */
export function runInfo(run: RunRecord, actor: string | undefined): RunInfo {
  const final = run.result as unknown as AgentFinal | undefined;
  const meta = final?.result?.meta;
  const receipt = (run.receipt as { kind?: unknown } | undefined)?.kind;
  return {
    runId: run.runId,
    sessionKey: run.sessionKey,
    status: run.status,
    acceptedAt: run.acceptedAt,
    ...(run.startedAt !== undefined ? { startedAt: run.startedAt } : {}),
    ...(run.endedAt !== undefined ? { endedAt: run.endedAt } : {}),
    ...(run.startedAt !== undefined && run.endedAt !== undefined ? { durationMs: run.endedAt - run.startedAt } : {}),
    ...(meta?.model ? { model: meta.model } : {}),
    ...(meta?.usage ? { usage: { input: meta.usage.input, output: meta.usage.output, total: meta.usage.total } } : {}),
    ...(typeof meta?.costUsd === "number" ? { costUsd: meta.costUsd } : {}),
    ...(run.stopReason ? { stopReason: run.stopReason } : {}),
    ...(run.error ? { error: run.error } : {}),
    ...(typeof receipt === "string" ? { receipt } : {}),
    ...(actor ? { actor } : {}),
  };
}

/**
 * `runs.list`: the newest runs (the web console's Runs page), for operator.read inside the token's sessions. Each
 * row is metadata only; `agent.wait` gives a run's outcome in OpenClaw's shape.
 */
export const runsListMethod = defineMethod({
  name: "runs.list",
  scope: "read",
  params: runsListParamsSchema,
  async handle({ params, conn, gw, reply }) {
    const sessionKey = conn.access.readFilter(params.sessionKey, params.agentId ?? gw.service.rt.defaultAgentId);
    const limit = params.limit ?? DEFAULT_RUNS_LIMIT;
    // a token confined to some sessions sees fewer rows than were read: read a few times the limit, once
    const records = await gw.service.recentRuns({ limit: sessionKey ? limit : limit * READ_FACTOR, sessionKey });
    const runs = records
      .filter((r) => conn.access.canSeeSession(r.sessionKey))
      .slice(0, limit)
      .map((r) => runInfo(r, gw.service.originOfRun(r)?.actor));
    const result: RunsListResult = { runs };
    reply.ok(result);
  },
});
