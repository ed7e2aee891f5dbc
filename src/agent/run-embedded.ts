import { checkContextFits, compactionReserve } from "../prompt/context-budget.js";
import { eligibleSkills, formatSkillsPrompt, type SkillSnapshot, skillsEnv } from "../prompt/skills.js";
import { buildSystemPrompt, type PromptMode } from "../prompt/system-prompt.js";
import { type ChatMessage, emptyUsage, ProviderError, type ThinkingLevel, type Usage } from "../providers/types.js";
import { runInSessionAndGlobalLanes } from "../queue/lanes.js";
import { sessionLaneName } from "../session/keys.js";
import { acquireSessionWriteLock, resolveAcquireTimeoutMs, resolveMaxHoldMs } from "../session/write-lock.js";
import { capForModel, capText, redactSecrets, sanitizeForEvent } from "../tools/sanitize.js";
import { resolveIdleTimeoutMs, withIdleWatchdog } from "./idle-watchdog.js";
import { type LoopOutcome, runAgentLoop, type SteeringPort } from "./loop.js";
import { type ReplyPayload, shapeReply } from "./reply.js";
import type { AgentRuntime } from "./runtime.js";

export type RunStatus = "ok" | "error" | "timeout" | "aborted";

export interface EmbeddedRunParams {
  runId: string;
  sessionKey: string;
  agentId: string;
  message: string;
  /** "<provider>/<model>" */
  modelRef: string;
  thinking?: ThinkingLevel;
  /** 0 = unlimited */
  timeoutMs: number;
  lane?: string;
  promptMode?: PromptMode;
  extraSystemPrompt?: string;
  signal?: AbortSignal;
  steering?: SteeringPort;
  /** called the moment the loop has returned: from then on the run can take no steering message */
  onLoopEnd?: () => void;
  skills?: SkillSnapshot;
  /** called once the run holds its lanes (the queued phase is over) */
  onStarted?: (info: { startedAt: number; laneWaitMs: number }) => void;
}

export interface EmbeddedRunResult {
  runId: string;
  sessionKey: string;
  status: RunStatus;
  stopReason: string;
  payloads: ReplyPayload[];
  usage: Usage;
  startedAt: number;
  endedAt: number;
  durationMs: number;
  laneWaitMs: number;
  steps: number;
  model: string;
  error?: { message: string; kind: string };
}

/** Raised as the abort reason when the run timeout expires, so the outcome is "timeout", not "aborted". */
export class RunTimeoutError extends Error {
  constructor(ms: number) {
    super(`run timed out after ${Math.round(ms / 1000)} s`);
    this.name = "RunTimeoutError";
  }
}

/** A run that failed before the loop could start (context too big, provider misconfigured, session busy). */
export class RunSetupError extends Error {
  readonly kind: string;
  constructor(kind: string, message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = "RunSetupError";
    this.kind = kind;
  }
}

export function errorKind(err: unknown): string {
  if (err instanceof ProviderError) {
    if (err.kind === "rate_limit" || err.kind === "context_length" || err.kind === "timeout") return err.kind;
    if (err.kind === "bad_request" && /refus|safety|content policy/i.test(err.message)) return "refusal";
    return "unknown";
  }
  if (err instanceof RunSetupError) return err.kind;
  return "unknown";
}

/**
 * One turn inside one session: lanes (session, then global) → session write lock → history → loop → transcript
 * and events. Lifecycle start/end/error are emitted here; agentCommand only adds a fallback end if this throws.
 */
export async function runEmbeddedAgent(rt: AgentRuntime, params: EmbeddedRunParams): Promise<EmbeddedRunResult> {
  const globalLane = params.lane ?? "main";
  return runInSessionAndGlobalLanes(
    rt.lanes,
    sessionLaneName(params.sessionKey),
    globalLane === sessionLaneName(params.sessionKey) ? "main" : globalLane,
    (wait) => runHoldingLanes(rt, params, wait.sessionWaitMs + wait.globalWaitMs),
    { signal: params.signal, label: params.runId },
  );
}

async function runHoldingLanes(
  rt: AgentRuntime,
  params: EmbeddedRunParams,
  laneWaitMs: number,
): Promise<EmbeddedRunResult> {
  const { runId, sessionKey } = params;
  const emit = (stream: "lifecycle" | "assistant" | "tool", data: Record<string, unknown>) =>
    rt.bus.emit(runId, sessionKey, stream, data);
  const startedAt = rt.clock.now();
  params.onStarted?.({ startedAt, laneWaitMs });
  emit("lifecycle", { phase: "start", startedAt });

  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(params.signal?.reason ?? new Error("aborted"));
  if (params.signal?.aborted) onOuterAbort();
  else params.signal?.addEventListener("abort", onOuterAbort, { once: true });
  let timer: unknown;
  if (params.timeoutMs > 0) {
    timer = rt.clock.setTimeout(() => controller.abort(new RunTimeoutError(params.timeoutMs)), params.timeoutMs);
  }

  let outcome: LoopOutcome | undefined;
  let setupError: Error | undefined;
  let modelLabel = params.modelRef;
  let lock: Awaited<ReturnType<typeof acquireSessionWriteLock>> | undefined;
  let claimedBy: string | undefined;
  const transcriptMessages: ChatMessage[] = [];
  try {
    const model = rt.resolveModel(params.modelRef);
    modelLabel = model.ref;
    const provider = withIdleWatchdog(
      await rt.getProvider(model.providerId),
      resolveIdleTimeoutMs({
        selfHosted: rt.isSelfHosted(model),
        providerTimeoutMs: model.timeoutSeconds ? model.timeoutSeconds * 1000 : undefined,
        runTimeoutMs: params.timeoutMs,
      }),
      rt.clock,
    );
    const workspace = await rt.workspaceFor(params.agentId);

    // The write lock is taken before anything is streamed or written, and held until the last row is down.
    lock = await acquireSessionWriteLock(rt.sessionLockPath(sessionKey), {
      acquireTimeoutMs: resolveAcquireTimeoutMs(rt.config.session.writeLock.acquireTimeoutMs, rt.env, (m) =>
        rt.logger.warn(m),
      ),
      maxHoldMs: resolveMaxHoldMs(params.timeoutMs),
      signal: controller.signal,
    });

    const { messages: history, chars: historyChars } = rt.history.load(rt.store, sessionKey);
    const userMessage: ChatMessage = { role: "user", content: params.message };

    // Skills whose required env vars are missing are not offered: the model could not use them.
    const skills = eligibleSkills(params.skills?.skills ?? [], rt.env).eligible;
    const mode = params.promptMode ?? "full";
    const hookCtx = { agentId: params.agentId, sessionKey, runId, workspaceDir: workspace.dir };
    const bootstrapFiles =
      mode === "full" ? await rt.bootstrap.load(workspace.dir, { onWarning: (m) => rt.logger.warn(m) }) : [];
    // agent:bootstrap may add or remove files before the prompt is final.
    if (mode === "full")
      await rt.fireInternal("agent", "bootstrap", {
        workspaceDir: workspace.dir,
        bootstrapFiles,
        agentId: params.agentId,
        sessionKey,
      });
    let system = buildSystemPrompt({
      mode,
      agentId: params.agentId,
      workspaceDir: workspace.dir,
      tools: [...rt.tools.values()].map((t) => ({ name: t.name, description: t.description })),
      skillsPrompt: mode === "full" ? formatSkillsPrompt(skills) : undefined,
      bootstrapFiles,
      extraSystemPrompt: params.extraSystemPrompt,
      now: new Date(rt.clock.now()),
      runContext: { sessionKey, model: model.ref },
    });
    let modelUserMessage: ChatMessage = userMessage;
    const hooks = rt.pluginHooks;
    if (hooks.has("before_prompt_build")) {
      const r = await hooks.runBeforePromptBuild({ prompt: params.message, messages: history }, hookCtx);
      if (r.systemPrompt !== undefined) system = r.systemPrompt;
      if (r.prependSystemContext) system = `${r.prependSystemContext}\n\n${system}`;
      if (r.appendSystemContext) system = `${system}\n\n${r.appendSystemContext}`;
      if (r.prependContext) modelUserMessage = { role: "user", content: `${r.prependContext}\n\n${params.message}` };
    }
    const fit = checkContextFits({
      systemPrompt: system,
      messagesChars: historyChars + JSON.stringify(modelUserMessage).length,
      toolsChars: rt.toolSpecsChars(),
      contextWindow: model.model.contextWindow,
      reserveTokens: compactionReserve(model.model.contextWindow, rt.config.agents.defaults.compaction.reserveTokens),
    });
    if (!fit.ok) throw new RunSetupError("context_length", fit.message);

    rt.store.appendTranscript([
      { sessionKey, kind: "message", runId, createdAt: rt.clock.now(), message: userMessage },
    ]);
    transcriptMessages.push(userMessage);

    // A plugin may claim the turn before the model is called: a synthetic reply, or silence.
    if (hooks.has("before_agent_reply")) {
      const claim = await hooks.runBeforeAgentReply({ prompt: params.message, messages: history }, hookCtx);
      if (claim?.handled) {
        const text = claim.reply ?? "";
        if (text) {
          emit("assistant", { text, delta: text });
          const reply: ChatMessage = { role: "assistant", content: [{ type: "text", text }], stopReason: "stop" };
          transcriptMessages.push(reply);
          rt.store.appendTranscript([
            { sessionKey, kind: "message", runId, createdAt: rt.clock.now(), message: reply },
          ]);
        }
        outcome = { stopReason: "stop", usage: emptyUsage(), steps: 0, finalText: text, toolErrors: [] };
        claimedBy = claim.pluginId;
      }
    }

    const loop = outcome
      ? undefined
      : runAgentLoop(
          {
            model: model.modelId,
            system,
            // The model sees prependContext; the transcript (above) keeps what the user wrote.
            messages: [...history, modelUserMessage],
            maxSteps: rt.config.agents.defaults.maxSteps,
            // a model configured with `reasoning: false` would reject the parameters a thinking level adds
            thinking: model.model.reasoning === false ? "off" : params.thinking,
            maxTokens: model.model.maxTokens,
          },
          {
            provider,
            tools: rt.tools,
            signal: controller.signal,
            toolContext: { workspaceDir: workspace.dir, env: skills.length ? skillsEnv(skills) : undefined },
            steering: params.steering,
            resultForModel: (text) => capForModel(text),
            beforeToolCall: hooks.has("before_tool_call")
              ? (call) =>
                  hooks.runBeforeToolCall({ toolName: call.name, params: call.arguments, toolCallId: call.id }, hookCtx)
              : undefined,
            afterToolCall: hooks.has("after_tool_call")
              ? (call, result) =>
                  void hooks.runObservers(
                    "after_tool_call",
                    {
                      toolName: call.name,
                      params: call.arguments,
                      toolCallId: call.id,
                      result: result.content,
                      error: result.isError ? result.content : undefined,
                    },
                    hookCtx,
                  )
              : undefined,
          },
        );
    while (loop) {
      const next = await loop.next();
      if (next.done) {
        outcome = next.value;
        params.onLoopEnd?.();
        break;
      }
      const ev = next.value;
      switch (ev.type) {
        case "text_delta":
          emit("assistant", { text: ev.text, delta: ev.delta });
          break;
        case "tool_start":
          emit("tool", {
            phase: "start",
            name: ev.name,
            toolCallId: ev.toolCallId,
            args: sanitizeForEvent(redactSecrets(ev.args)),
          });
          break;
        case "tool_update":
          emit("tool", {
            phase: "update",
            name: ev.name,
            toolCallId: ev.toolCallId,
            partialResult: capText(ev.partial),
          });
          break;
        case "tool_end":
          emit("tool", {
            phase: "result",
            name: ev.name,
            toolCallId: ev.toolCallId,
            isError: ev.isError,
            result: capText(ev.result),
            ...(ev.skipped ? { skipped: ev.skipped } : {}),
          });
          break;
        case "message": {
          let message = ev.message;
          // tool_result_persist runs synchronously, right before the row is written.
          if (message.role === "toolResult" && hooks.has("tool_result_persist")) {
            message = hooks.runToolResultPersist(
              { message, toolName: message.toolName, toolCallId: message.toolCallId },
              hookCtx,
            );
          }
          transcriptMessages.push(message);
          rt.store.appendTranscript([{ sessionKey, kind: "message", runId, createdAt: rt.clock.now(), message }]);
          break;
        }
        default:
          break;
      }
    }
  } catch (err) {
    setupError = err instanceof Error ? err : new Error(String(err));
  } finally {
    params.onLoopEnd?.();
    if (timer !== undefined) rt.clock.clearTimeout(timer);
    params.signal?.removeEventListener("abort", onOuterAbort);
    if (lock) await lock.release().catch((e) => rt.logger.warn(`releasing session write lock: ${e.message}`));
  }

  const endedAt = rt.clock.now();
  const usage = outcome?.usage ?? emptyUsage();
  const abortReason = controller.signal.reason;
  const timedOut = controller.signal.aborted && abortReason instanceof RunTimeoutError;
  let status: RunStatus;
  let stopReason: string;
  let error: EmbeddedRunResult["error"];
  if (timedOut) {
    status = "timeout";
    stopReason = "timeout";
    error = { message: (abortReason as Error).message, kind: "timeout" };
  } else if (controller.signal.aborted) {
    status = "aborted";
    stopReason = "aborted";
    const reasonText = abortReason instanceof Error ? abortReason.message : String(abortReason ?? "aborted");
    error = { message: reasonText, kind: "aborted" };
  } else if (setupError) {
    status = "error";
    stopReason = "error";
    error = { message: setupError.message, kind: errorKind(setupError) };
  } else if (outcome?.stopReason === "error") {
    status = "error";
    stopReason = "error";
    error = { message: outcome.error?.message ?? "model error", kind: errorKind(outcome.error) };
  } else {
    status = "ok";
    stopReason = outcome?.stopReason ?? "stop";
  }

  let payloads = shapeReply({
    assistantText: outcome?.finalText ?? "",
    modelError: status === "error" ? error?.message : undefined,
    toolErrors: outcome?.toolErrors,
  });
  payloads = await outgoing(rt, payloads, { agentId: params.agentId, sessionKey, runId });

  if (usage.total > 0) {
    const s = rt.store.getSession(sessionKey);
    if (s) {
      rt.store.updateSession(sessionKey, {
        inputTokens: s.inputTokens + usage.input,
        outputTokens: s.outputTokens + usage.output,
        totalTokens: s.totalTokens + usage.total,
        updatedAt: endedAt,
      });
    }
  } else {
    rt.store.updateSession(sessionKey, { updatedAt: endedAt });
  }

  const result: EmbeddedRunResult = {
    runId,
    sessionKey,
    status,
    stopReason,
    payloads,
    usage,
    startedAt,
    endedAt,
    durationMs: endedAt - startedAt,
    laneWaitMs,
    steps: outcome?.steps ?? 0,
    model: modelLabel,
    error,
  };
  if (rt.pluginHooks.has("agent_end")) {
    void rt.pluginHooks.runObservers(
      "agent_end",
      {
        messages: transcriptMessages,
        success: status === "ok",
        error: error?.message,
        durationMs: endedAt - startedAt,
      },
      { agentId: params.agentId, sessionKey, runId },
    );
  }
  if (status === "ok") {
    emit("lifecycle", {
      phase: "end",
      startedAt,
      endedAt,
      status,
      stopReason,
      usage,
      ...(claimedBy ? { claimedBy } : {}),
    });
  } else {
    emit("lifecycle", {
      phase: "error",
      startedAt,
      endedAt,
      status,
      stopReason,
      error: error?.message,
      kind: error?.kind,
    });
  }
  return result;
}

/**
 * The outbound path of the final payloads: message_sending may rewrite or cancel each one (cancel is terminal),
 * then message_sent observers and the internal message:sent hook see what actually goes out.
 */
async function outgoing(
  rt: AgentRuntime,
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
