import { type ChatMessage, emptyUsage, estimateCostUsd, type Usage } from "../../providers/types.js";
import { endedByOf } from "../../queue/in-band.js";
import type { RunProfile } from "../profile/profile.js";
import { type ReplyPayload, shapeReply } from "../reply.js";
import { errorKind, RunTimeoutError } from "./errors.js";
import type { RunEmitter } from "./events.js";
import type { ExecuteResult } from "./execute.js";
import type { RunPorts } from "./ports.js";
import type { ReplyOptions, ReplyParts } from "./projection.js";
import type { RunResult, RunSpec, RunStatus } from "./spec.js";

/** Every way a run can end, before it is turned into a status. */
export type RunEnd =
  | { kind: "timeout"; reason: RunTimeoutError }
  | { kind: "aborted"; reason: string }
  | { kind: "setup_failed"; error: Error }
  | { kind: "model_failed"; error: Error }
  | { kind: "completed"; stopReason: string };

export interface Classified {
  status: RunStatus;
  stopReason: string;
  error?: { message: string; kind: string };
}

export function classifyOutcome(signal: AbortSignal, exec: ExecuteResult | undefined, setupError?: Error): RunEnd {
  const reason: unknown = signal.reason;
  if (signal.aborted && reason instanceof RunTimeoutError) return { kind: "timeout", reason };
  if (signal.aborted)
    return { kind: "aborted", reason: reason instanceof Error ? reason.message : String(reason ?? "aborted") };
  if (setupError) return { kind: "setup_failed", error: setupError };
  if (!exec) return { kind: "setup_failed", error: new Error("the run ended before it started") };
  if (exec.kind === "claimed") return { kind: "completed", stopReason: "stop" };
  if (exec.kind === "command") return { kind: "completed", stopReason: "command" };
  const { outcome } = exec;
  if (outcome.stopReason === "error") return { kind: "model_failed", error: outcome.error ?? new Error("model error") };
  if (outcome.stopReason === "aborted") return { kind: "aborted", reason: "aborted" };
  return { kind: "completed", stopReason: outcome.stopReason };
}

export function statusOf(end: RunEnd): Classified {
  switch (end.kind) {
    case "timeout":
      return { status: "timeout", stopReason: "timeout", error: { message: end.reason.message, kind: "timeout" } };
    case "aborted":
      return { status: "aborted", stopReason: "aborted", error: { message: end.reason, kind: "aborted" } };
    case "setup_failed":
    case "model_failed":
      return {
        status: "error",
        stopReason: "error",
        error: { message: end.error.message, kind: errorKind(end.error) },
      };
    case "completed":
      return { status: "ok", stopReason: end.stopReason };
    default:
      return assertNever(end);
  }
}

function assertNever(x: never): never {
  throw new Error(`unhandled run end: ${JSON.stringify(x)}`);
}

export interface FinishInput {
  spec: RunSpec;
  startedAt: number;
  laneWaitMs: number;
  signal: AbortSignal;
  exec?: ExecuteResult;
  setupError?: Error;
  /** the model the run was asked to use (named in the result when no model answered) */
  modelRef: string;
  /** what the run could use (absent when it failed before prepare resolved it) */
  profile?: RunProfile;
  written: ChatMessage[];
  /** reasoning, tool summaries and mid-run messages the run's projection kept (absent when it never ran) */
  parts?: ReplyParts;
  options?: ReplyOptions;
  /** the reply text block streaming already delivered: the final payloads do not repeat it */
  deliveredByBlocks?: string;
}

/** Finish: classify, shape the reply, agent_end, the terminal lifecycle event (usage is stored with the run's end). */
export async function finishRun(rt: RunPorts, events: RunEmitter, input: FinishInput): Promise<RunResult> {
  return announceFinish(rt, events, input, await finishResult(rt, input));
}

/** How the run ended (classified, the reply shaped), before anyone is told: its end can be stored first. */
export async function finishResult(rt: RunPorts, input: FinishInput): Promise<RunResult> {
  const { spec, exec } = input;
  const endedAt = rt.clock.now();
  const { status, stopReason, error } = statusOf(classifyOutcome(input.signal, exec, input.setupError));
  const usage = exec?.kind === "loop" ? exec.usage : emptyUsage();
  const model = exec?.kind === "loop" ? exec.model : input.modelRef;
  const ctx = { agentId: spec.agentId, sessionKey: spec.sessionKey, runId: spec.runId };
  const parts = input.parts;
  const delivered = input.deliveredByBlocks ?? "";
  const payloads = await outgoing(
    rt,
    shapeReply({
      assistantText: undelivered(exec?.kind === "loop" ? exec.outcome.finalText : (exec?.text ?? ""), delivered),
      reasoning: parts?.reasoning.join("\n\n"),
      includeReasoning: input.options?.reasoning === "on",
      toolSummaries: parts?.toolSummaries,
      verbose: input.options !== undefined && input.options.verbose !== "off",
      messagingSends: parts?.messagingSends,
      deliveredByBlocks: delivered.trim() !== "",
      modelError: status === "error" ? error?.message : undefined,
      toolErrors: exec?.kind === "loop" ? exec.outcome.toolErrors : undefined,
    }),
    ctx,
  );
  // the session's token counts are written with the run's end, in its transaction (queue/turn.ts recordOutcome)
  const result: RunResult = {
    runId: spec.runId,
    sessionKey: spec.sessionKey,
    status,
    stopReason,
    payloads,
    usage,
    startedAt: input.startedAt,
    endedAt,
    durationMs: endedAt - input.startedAt,
    laneWaitMs: input.laneWaitMs,
    steps: exec?.kind === "loop" ? exec.outcome.steps : 0,
    model,
    ...modelFacts(input.profile, model, usage),
    ...(input.profile?.credentials?.used ? { authProfile: input.profile.credentials.used } : {}),
    error,
    // another client's /stop or interrupt: the run's own client sees who and with what
    ...(status === "aborted" && endedByOf(input.signal) ? { endedBy: endedByOf(input.signal) } : {}),
  };
  return result;
}

/** agent_end and the terminal lifecycle event of `result`; returns it. */
export function announceFinish(rt: RunPorts, events: RunEmitter, input: FinishInput, result: RunResult): RunResult {
  const { spec, exec } = input;
  const { status, error } = result;
  const ctx = { agentId: spec.agentId, sessionKey: spec.sessionKey, runId: spec.runId };
  if (rt.pluginHooks.has("agent_end")) {
    void rt.pluginHooks.runObservers(
      "agent_end",
      { messages: input.written, success: status === "ok", error: error?.message, durationMs: result.durationMs },
      ctx,
    );
  }
  emitTerminal(events, result, exec?.kind === "claimed" ? exec.pluginId : undefined);
  return result;
}

/** The part of the reply's text that block streaming did not deliver (its tail), or all of it. */
function undelivered(text: string, delivered: string): string {
  return delivered && text.startsWith(delivered) ? text.slice(delivered.length) : text;
}

/** The one terminal lifecycle event of a run: `end` when it succeeded, `error` otherwise. */
export function emitTerminal(events: RunEmitter, r: RunResult, claimedBy?: string): void {
  if (r.status === "ok") {
    events.emit("lifecycle", {
      phase: "end",
      startedAt: r.startedAt,
      endedAt: r.endedAt,
      status: "ok",
      stopReason: r.stopReason,
      usage: r.usage,
      ...(r.model ? { model: r.model } : {}),
      ...(r.authProfile ? { authProfile: r.authProfile } : {}),
      ...(claimedBy ? { claimedBy } : {}),
    });
    return;
  }
  events.emit("lifecycle", {
    phase: "error",
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    status: r.status,
    stopReason: r.stopReason,
    error: r.error?.message,
    kind: r.error?.kind,
    ...(r.model ? { model: r.model } : {}),
    ...(r.authProfile ? { authProfile: r.authProfile } : {}),
    ...(r.endedBy ? { endedBy: r.endedBy } : {}),
  });
}

/**
 * The answering model's display name and the run's estimated cost (config `name` and `cost`). The usage of a run
 * that fell back is priced at the answering model's rates: an estimate, as the field's name says.
 */
function modelFacts(
  profile: RunProfile | undefined,
  ref: string,
  usage: Usage,
): { modelName?: string; costUsd?: number } {
  // no profile: the run failed before it knew its models, and no model answered
  if (!ref || !profile) return {};
  let entry: ReturnType<RunProfile["resolveModel"]>["model"];
  try {
    entry = profile.resolveModel(ref).model;
  } catch {
    return {};
  }
  // with spend control every call was priced with the model that served it (compaction and fallbacks included):
  // that sum is the run's cost; without it, or when a call's model had no price, the estimate stands
  const meter = profile.limits?.meter;
  if (meter && meter.calls > 0 && meter.unpriced === 0) {
    return { ...(entry.name ? { modelName: entry.name } : {}), costUsd: Math.round(meter.usd * 1e6) / 1e6 };
  }
  return {
    ...(entry.name ? { modelName: entry.name } : {}),
    ...(entry.cost ? { costUsd: estimateCostUsd(usage, entry.cost) } : {}),
  };
}

/**
 * The outbound path of the final payloads: message_sending may rewrite or cancel each one (cancel is terminal),
 * then message_sent observers and the internal message:sent hook see what actually goes out.
 */
async function outgoing(
  rt: RunPorts,
  payloads: ReplyPayload[],
  ctx: { agentId: string; sessionKey: string; runId: string },
): Promise<ReplyPayload[]> {
  const hooks = rt.pluginHooks;
  const sending = hooks.has("message_sending");
  const sent = hooks.has("message_sent") || rt.internalHooks.has("message", "sent");
  if (!sending && !sent) return payloads;
  const out: ReplyPayload[] = [];
  for (const p of payloads) {
    let text = p.text;
    if (sending) {
      const d = await hooks.runMessageSending({ content: text }, ctx);
      if (d.cancel) continue;
      text = d.content;
    }
    out.push({ ...p, text });
  }
  if (sent) {
    for (const p of out) {
      void hooks.runObservers("message_sent", { content: p.text, success: true }, ctx);
      void rt.fireInternal("message", "sent", { ...ctx, content: p.text });
    }
  }
  return out;
}
