import path from "node:path";
import { resolveSkillSnapshot, type SkillSnapshot } from "../prompt/skills.js";
import type { PromptMode } from "../prompt/system-prompt.js";
import type { ThinkingLevel } from "../providers/types.js";
import { acquireSessionWriteLock, resolveAcquireTimeoutMs } from "../session/write-lock.js";
import type { SteeringPort } from "./loop.js";
import { type EmbeddedRunResult, errorKind, runEmbeddedAgent } from "./run-embedded.js";
import type { AgentRuntime } from "./runtime.js";

export interface AgentCommandParams {
  runId: string;
  sessionKey: string;
  agentId: string;
  message: string;
  model?: string;
  thinking?: ThinkingLevel;
  /** seconds; 0 = unlimited; default agents.defaults.timeoutSeconds */
  timeoutSeconds?: number;
  lane?: string;
  promptMode?: PromptMode;
  extraSystemPrompt?: string;
  signal?: AbortSignal;
  steering?: SteeringPort;
  onLoopEnd?: () => void;
  onStarted?: (info: { startedAt: number; laneWaitMs: number }) => void;
}

/** `/new` and `/reset` are handled before the model: they start a new transcript generation. */
export function parseSlashCommand(message: string): { command: "new" | "reset" | "stop"; rest: string } | undefined {
  const m = message.trim().match(/^\/(new|reset|stop)(?:\s+([\s\S]*))?$/i);
  if (!m) return undefined;
  return { command: m[1].toLowerCase() as "new" | "reset" | "stop", rest: (m[2] ?? "").trim() };
}

/**
 * Runs one turn: resolves model and thinking defaults, handles /new and /reset, takes the skills snapshot, calls
 * runEmbeddedAgent, and emits a fallback lifecycle error if the embedded run threw before emitting its own end.
 */
export async function agentCommand(rt: AgentRuntime, params: AgentCommandParams): Promise<EmbeddedRunResult> {
  const { runId, sessionKey } = params;
  let lifecycleEnded = false;
  const unsubscribe = rt.bus.subscribe((ev) => {
    if (ev.runId === runId && ev.stream === "lifecycle" && (ev.data.phase === "end" || ev.data.phase === "error")) {
      lifecycleEnded = true;
    }
  });
  const startedAt = rt.clock.now();
  try {
    await rt.init();
    const hooks = rt.pluginHooks;
    const hookCtx = { agentId: params.agentId, sessionKey, runId };
    const session = rt.store.ensureSession(sessionKey, params.agentId, startedAt);
    let message = params.message;
    if (hooks.has("message_received")) void hooks.runObservers("message_received", { content: message }, hookCtx);
    void rt.fireInternal("message", "received", { ...hookCtx, content: message });
    let reset = false;
    const slash = parseSlashCommand(message);
    if (slash) {
      // Slash commands are handled here, before the model (the service already aborted the run for /stop).
      void rt.fireInternal("command", slash.command, { ...hookCtx, command: slash.command, args: slash.rest });
      if (slash.command === "stop") return synthetic(rt, params, startedAt, "Stopped.");
      await withTranscriptLock(rt, sessionKey, () => rt.store.resetSession(sessionKey, startedAt, `/${slash.command}`));
      if (hooks.has("session_end")) {
        void hooks.runObservers(
          "session_end",
          { sessionKey, sessionId: session.sessionId, reason: slash.command },
          hookCtx,
        );
      }
      reset = true;
      if (!slash.rest) return synthetic(rt, params, startedAt, "Started a new session.");
      message = slash.rest;
    }

    // The service stores the session record when it accepts the message, so "new" cannot mean "no record yet": a
    // session starts with the first turn that runs on an empty transcript generation (its first turn, or the first
    // one after /new or /reset, which ended the previous session).
    if (hooks.has("session_start") && rt.store.readTranscript(sessionKey, { limit: 1 }).length === 0) {
      void hooks.runObservers("session_start", { sessionKey, sessionId: session.sessionId }, hookCtx);
    }

    let modelRef = params.model ?? session.modelOverride ?? rt.agentModelRef(params.agentId);
    // before_model_resolve runs before the session's messages are loaded; the first defined override wins.
    if (hooks.has("before_model_resolve")) {
      const o = await hooks.runBeforeModelResolve({ prompt: message }, hookCtx);
      if (o.modelOverride || o.providerOverride) {
        const current = modelRef?.split("/") ?? [];
        const model = o.modelOverride ?? current.slice(1).join("/");
        modelRef = model.includes("/") && !o.providerOverride ? model : `${o.providerOverride ?? current[0]}/${model}`;
      }
    }
    const thinking = (params.thinking ??
      (session.thinking as ThinkingLevel | undefined) ??
      rt.config.agents.defaults.thinkingDefault) as ThinkingLevel;
    const timeoutSeconds = params.timeoutSeconds ?? rt.config.agents.defaults.timeoutSeconds;

    const skills = await sessionSkills(rt, params.agentId, sessionKey, session.skillsSnapshot, reset);
    return await runEmbeddedAgent(rt, {
      runId,
      sessionKey,
      agentId: params.agentId,
      message,
      modelRef: modelRef ?? "",
      thinking,
      timeoutMs: timeoutSeconds * 1000,
      lane: params.lane,
      promptMode: params.promptMode,
      extraSystemPrompt: params.extraSystemPrompt,
      signal: params.signal,
      steering: params.steering,
      onLoopEnd: params.onLoopEnd,
      skills,
      onStarted: params.onStarted,
    });
  } catch (err) {
    const endedAt = rt.clock.now();
    const message = err instanceof Error ? err.message : String(err);
    const aborted = params.signal?.aborted === true;
    const kind = aborted ? "aborted" : errorKind(err);
    if (!lifecycleEnded) {
      rt.bus.emit(runId, sessionKey, "lifecycle", {
        phase: "error",
        startedAt,
        endedAt,
        status: aborted ? "aborted" : "error",
        stopReason: aborted ? "aborted" : "error",
        error: message,
        kind,
      });
    }
    return {
      runId,
      sessionKey,
      status: aborted ? "aborted" : "error",
      stopReason: aborted ? "aborted" : "error",
      payloads: aborted ? [] : [{ text: `⚠️ ${message}`, kind: "error" }],
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      startedAt,
      endedAt,
      durationMs: endedAt - startedAt,
      laneWaitMs: 0,
      steps: 0,
      model: params.model ?? "",
      error: { message, kind },
    };
  } finally {
    unsubscribe();
  }
}

/** A turn answered without the model (slash commands): still a full lifecycle, so waiters and clients see it end. */
function synthetic(rt: AgentRuntime, params: AgentCommandParams, startedAt: number, text: string): EmbeddedRunResult {
  rt.bus.emit(params.runId, params.sessionKey, "lifecycle", { phase: "start", startedAt });
  rt.bus.emit(params.runId, params.sessionKey, "assistant", { text, delta: text });
  const endedAt = rt.clock.now();
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
  rt.bus.emit(params.runId, params.sessionKey, "lifecycle", {
    phase: "end",
    startedAt,
    endedAt,
    status: "ok",
    stopReason: "command",
    usage,
  });
  return {
    runId: params.runId,
    sessionKey: params.sessionKey,
    status: "ok",
    stopReason: "command",
    payloads: [{ text }],
    usage,
    startedAt,
    endedAt,
    durationMs: endedAt - startedAt,
    laneWaitMs: 0,
    steps: 0,
    model: "",
  };
}

/**
 * The session reuses its skills snapshot between runs; it is retaken after /new or /reset, or when the skill
 * folders changed (fingerprint of listings + SKILL.md mtimes, no file reads), so a deleted skill is never offered.
 */
async function sessionSkills(
  rt: AgentRuntime,
  agentId: string,
  sessionKey: string,
  stored: string | undefined,
  reset: boolean,
): Promise<SkillSnapshot> {
  const workspace = await rt.workspaceFor(agentId);
  const dirs = [path.join(workspace.dir, "skills"), ...rt.config.skills.dirs];
  let previous: SkillSnapshot | undefined;
  if (stored) {
    try {
      previous = JSON.parse(stored) as SkillSnapshot;
    } catch {
      previous = undefined;
    }
  }
  const { snapshot, reused } = await resolveSkillSnapshot({ previous, dirs, reset, now: new Date(rt.clock.now()) });
  if (!reused) {
    for (const w of snapshot.warnings) rt.logger.warn(w);
    rt.store.updateSession(sessionKey, { skillsSnapshot: JSON.stringify(snapshot) });
  }
  return snapshot;
}

/** Any rewrite of transcript rows (a reset marker here) holds the same session write lock as a run. */
async function withTranscriptLock<T>(rt: AgentRuntime, sessionKey: string, fn: () => T): Promise<T> {
  const lock = await acquireSessionWriteLock(rt.sessionLockPath(sessionKey), {
    acquireTimeoutMs: resolveAcquireTimeoutMs(rt.config.session.writeLock.acquireTimeoutMs, rt.env),
  });
  try {
    return fn();
  } finally {
    await lock.release();
  }
}
