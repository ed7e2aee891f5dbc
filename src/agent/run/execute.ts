import { addUsage, type ChatMessage, emptyUsage, type Usage } from "../../providers/types.js";
import type { LoopOutcome } from "../loop.js";
import type { AgentRuntime } from "../runtime.js";
import { runAttempt } from "./attempt.js";
import type { RunEmitter } from "./events.js";
import type { PreparedRun, TurnChoices } from "./prepare.js";
import type { RunProjection } from "./projection.js";
import type { RunSpec } from "./spec.js";

/** How the execute phase ended; finish classifies it. */
export type ExecuteResult =
  /** a plugin answered (or silenced) the turn before the model was called */
  | { kind: "claimed"; text: string; pluginId?: string }
  /** the loop ran; `model` is the one that produced the last outcome */
  | { kind: "loop"; outcome: LoopOutcome; model: string; usage: Usage };

export interface ExecuteContext {
  rt: AgentRuntime;
  spec: RunSpec;
  prepared: PreparedRun;
  choices: TurnChoices;
  signal: AbortSignal;
  events: RunEmitter;
  projection: RunProjection;
}

/** Execute: the user's message goes down, a plugin may claim the turn, else the attempt loop runs the model. */
export async function executeRun(ctx: ExecuteContext): Promise<ExecuteResult> {
  ctx.projection.write(ctx.prepared.userMessage);
  const claimed = await claimByPlugin(ctx);
  if (claimed) return claimed;
  return attemptLoop(ctx, [...ctx.prepared.history, ctx.prepared.modelUserMessage]);
}

/** before_agent_reply: a plugin may answer with a synthetic reply, or with silence. */
async function claimByPlugin(ctx: ExecuteContext): Promise<ExecuteResult | undefined> {
  const hooks = ctx.rt.pluginHooks;
  if (!hooks.has("before_agent_reply")) return undefined;
  const { spec, prepared } = ctx;
  const claim = await hooks.runBeforeAgentReply({ prompt: spec.message, messages: prepared.history }, prepared.hookCtx);
  if (!claim?.handled) return undefined;
  const text = claim.reply ?? "";
  if (text) {
    ctx.events.emit("assistant", { text, delta: text });
    ctx.projection.write({ role: "assistant", content: [{ type: "text", text }], stopReason: "stop" });
  }
  return { kind: "claimed", text, pluginId: claim.pluginId };
}

/**
 * The attempt loop: the inner loop runs until its outcome is final. Each outcome is settled (its partial answer
 * written) or thrown away before the next attempt.
 */
async function attemptLoop(ctx: ExecuteContext, context: ChatMessage[]): Promise<ExecuteResult> {
  const model = ctx.prepared.model;
  let usage = emptyUsage();
  const outcome = await runAttempt(ctx.rt, ctx.spec, ctx.prepared, ctx.projection, {
    model,
    messages: context,
    thinking: ctx.choices.thinking,
    timeoutMs: ctx.choices.timeoutMs,
    signal: ctx.signal,
  });
  usage = addUsage(usage, outcome.usage);
  ctx.projection.settle();
  return { kind: "loop", outcome, model: model.ref, usage };
}
