import path from "node:path";
import { tracingRegistered } from "../../infra/tracing-gate.js";
import { resolveSkillSnapshot, type SkillSnapshot } from "../../prompt/skills.js";
import type { ReasoningLevel, VerboseLevel } from "../../protocol/enums.js";
import type { ThinkingLevel } from "../../providers/types.js";
import { endedByOf } from "../../queue/in-band.js";
import { runInSessionAndGlobalLanes } from "../../queue/lanes.js";
import { sessionLaneName } from "../../session/keys.js";
import { parseSlashCommand } from "./commands.js";
import { RunContextGuard } from "./context-guard.js";
import { runControl } from "./control.js";
import { coalescingEmitter } from "./delta-coalescer.js";
import { errorKind } from "./errors.js";
import { runEmitter } from "./events.js";
import { type ExecuteResult, executeRun } from "./execute.js";
import { announceFinish, classifyOutcome, emitTerminal, type FinishInput, finishResult, statusOf } from "./finish.js";
import type { TurnPorts } from "./ports.js";
import { type PreparedRun, prepareRun, type SessionLock, type TurnChoices } from "./prepare.js";
import { RunProjection } from "./projection.js";
import type { RunSpans } from "./spans.js";
import type { RunResult, RunSpec } from "./spec.js";

/**
 * One turn of one session: slash commands, the session's model/thinking/skills, then the run in its lanes
 * (prepare → execute → finish). A turn that fails before its run emitted a terminal event still gets one here.
 */
export async function runTurn(rt: TurnPorts, spec: RunSpec): Promise<RunResult> {
  let ended = false;
  const unsubscribe = rt.bus.subscribeRun(spec.runId, (ev) => {
    if (ev.stream === "lifecycle" && (ev.data.phase === "end" || ev.data.phase === "error")) ended = true;
  });
  const startedAt = rt.clock.now();
  let result: RunResult;
  let spans: RunSpans | undefined;
  try {
    // the one check per run: without a tracing SDK, spans stay undefined and nothing else is traced
    if (tracingRegistered()) spans = await startRunSpans(rt, spec);
    await rt.init();
    result = await turnBody(rt, spec, startedAt, spans);
  } catch (err) {
    result = failedTurn(spec, startedAt, rt.clock.now(), err);
    if (!ended) emitTerminal(runEmitter(rt.bus, spec.runId, spec.sessionKey), result);
  } finally {
    unsubscribe();
  }
  spans?.end(result);
  return result;
}

/** The run span (the tracing module is loaded on the first traced run only). */
async function startRunSpans(rt: TurnPorts, spec: RunSpec): Promise<RunSpans | undefined> {
  const { RunSpans } = await import("./spans.js");
  return RunSpans.start(spec, rt.config.agents.list.find((a) => a.id === spec.agentId)?.name);
}

async function turnBody(
  rt: TurnPorts,
  spec: RunSpec,
  startedAt: number,
  spans: RunSpans | undefined,
): Promise<RunResult> {
  const hooks = rt.pluginHooks;
  const hookCtx = { agentId: spec.agentId, sessionKey: spec.sessionKey, runId: spec.runId };
  // intake stored the session with the input; a run from elsewhere (cron, a test) may be its first. An adopted
  // input launched at once comes with the row its adoption read (on Postgres a round trip less per turn)
  const session =
    spec.session ??
    (await rt.store.getSession(spec.sessionKey)) ??
    (await rt.store.ensureSession(spec.sessionKey, spec.agentId, startedAt));
  spans?.conversation(session.sessionId);
  let message = spec.message;
  let reset = false;
  const slash = parseSlashCommand(message);
  if (slash) {
    if (slash.command === "stop" || slash.command === "compact") {
      // The service already aborted the active run for /stop. (/new and /reset fire theirs in the lifecycle.)
      void rt.fireInternal("command", slash.command, { ...hookCtx, command: slash.command, args: slash.rest });
    }
    if (slash.command === "stop") return synthetic(rt, spec, startedAt, "Stopped.");
    if (slash.command === "compact") {
      const choices = await resolveChoices(rt, spec, session, false);
      return runInLanes(rt, spec, { ...choices, compact: { instructions: slash.rest || undefined } }, spans);
    }
    // the one way a session is reset (session/lifecycle.ts): lock, command:<name>, session_end, session_start
    await rt.sessionLifecycle.reset(spec.sessionKey, {
      reason: slash.command,
      marker: `/${slash.command}`,
      command: { args: slash.rest, source: "in-band" },
      runId: spec.runId,
    });
    reset = true;
    if (!slash.rest) return synthetic(rt, spec, startedAt, "Started a new session.");
    message = slash.rest;
  }
  // A session starts with its first turn that runs on an empty transcript: the service stores the session record
  // when it accepts the message. Every later generation started with a reset, which fired its session_start.
  if (
    !reset &&
    session.generation === FIRST_GENERATION &&
    hooks.has("session_start") &&
    (await rt.store.readTranscript(spec.sessionKey, { limit: 1 })).length === 0
  ) {
    void hooks.runObservers(
      "session_start",
      { sessionKey: spec.sessionKey, sessionId: session.sessionId, generation: session.generation },
      hookCtx,
    );
  }
  const turnSpec = message === spec.message ? spec : { ...spec, message };
  const choices = await resolveChoices(rt, turnSpec, session, reset);
  return runInLanes(rt, turnSpec, choices, spans);
}

/** a session's first transcript generation (the store starts every session there) */
const FIRST_GENERATION = 1;

type SessionRow = Awaited<ReturnType<TurnPorts["store"]["ensureSession"]>>;

/** Model (request > session override > agent; before_model_resolve may change it), thinking, timeout, skills. */
async function resolveChoices(rt: TurnPorts, spec: RunSpec, session: SessionRow, reset: boolean): Promise<TurnChoices> {
  let modelRef = spec.model ?? session.modelOverride ?? rt.agentModelRef(spec.agentId);
  const hooks = rt.pluginHooks;
  if (hooks.has("before_model_resolve")) {
    const hookCtx = { agentId: spec.agentId, sessionKey: spec.sessionKey, runId: spec.runId };
    const o = await hooks.runBeforeModelResolve({ prompt: spec.message }, hookCtx);
    if (o.modelOverride || o.providerOverride) {
      const current = modelRef?.split("/") ?? [];
      const model = o.modelOverride ?? current.slice(1).join("/");
      modelRef = model.includes("/") && !o.providerOverride ? model : `${o.providerOverride ?? current[0]}/${model}`;
    }
  }
  const thinking = (spec.thinking ??
    (session.thinking as ThinkingLevel | undefined) ??
    rt.config.agents.defaults.thinkingDefault) as ThinkingLevel;
  const timeoutSeconds = spec.timeout ?? rt.config.agents.defaults.timeoutSeconds;
  const skills = await sessionSkills(rt, spec.agentId, spec.sessionKey, session.skillsSnapshot, reset);
  // request > the agent's own default > agents.defaults
  const agent = rt.config.agents.list.find((a) => a.id === spec.agentId);
  const { reasoningDefault, verboseDefault, blockStreamingDefault, blockStreamingBreak } = rt.config.agents.defaults;
  const blocks = (spec.blockStreaming ?? blockStreamingDefault) === "on" ? blockStreamingBreak : undefined;
  return {
    modelRef: modelRef ?? "",
    thinking,
    // request > the session's setting (sessions.patch) > the agent's own default > agents.defaults
    reasoning:
      spec.reasoningLevel ??
      (session.reasoningLevel as ReasoningLevel | undefined) ??
      agent?.reasoningDefault ??
      reasoningDefault,
    // request > the session's setting (sessions.patch) > the agent's own default > agents.defaults
    verbose:
      spec.verboseLevel ??
      (session.verboseLevel as VerboseLevel | undefined) ??
      agent?.verboseDefault ??
      verboseDefault,
    timeoutMs: timeoutSeconds * 1000,
    skills,
    ...(blocks ? { blockStreaming: blocks } : {}),
  };
}

/** The run holds its session lane, then the global lane (SPEC 3). */
function runInLanes(
  rt: TurnPorts,
  spec: RunSpec,
  choices: TurnChoices,
  spans: RunSpans | undefined,
): Promise<RunResult> {
  const sessionLane = sessionLaneName(spec.sessionKey);
  const globalLane = spec.lane ?? "main";
  return runInSessionAndGlobalLanes(
    rt.lanes,
    sessionLane,
    globalLane === sessionLane ? "main" : globalLane,
    (wait) => runPhases(rt, spec, choices, wait.sessionWaitMs + wait.globalWaitMs, spans),
    { signal: spec.signal, label: spec.runId, release: spec.releaseLanes },
  );
}

/** prepare → execute → finish, with the lock released and the timeout cleared however it ends. */
async function runPhases(
  rt: TurnPorts,
  spec: RunSpec,
  choices: TurnChoices,
  laneWaitMs: number,
  spans: RunSpans | undefined,
): Promise<RunResult> {
  // streamed deltas are merged on the run's beat before the bus (delta-coalescer.ts); no beat leaves the plain emitter
  const events = coalescingEmitter(runEmitter(rt.bus, spec.runId, spec.sessionKey), rt.runBeat(spec.runId));
  const startedAt = rt.clock.now();
  // the run records say "running" before the start event goes out
  await spec.onStarted?.({ startedAt, laneWaitMs });
  events.emit("lifecycle", {
    phase: "start",
    startedAt,
    ...(choices.modelRef ? { model: choices.modelRef } : {}),
    ...(choices.blockStreaming ? { blockStreaming: choices.blockStreaming } : {}),
  });
  const control = runControl(spec.signal, choices.timeoutMs, rt.clock);
  let lock: SessionLock | undefined;
  let prepared: PreparedRun | undefined;
  let projection: RunProjection | undefined;
  let exec: ExecuteResult | undefined;
  let setupError: Error | undefined;
  try {
    prepared = await prepareRun(rt, spec, choices, {
      signal: control.signal,
      events,
      onLock: (l) => {
        lock = l;
        // stuck-session recovery gave up on this run (it ignored its abort): the session's next run needs the lock
        spec.releaseLanes?.addEventListener("abort", () => void l.release().catch(() => {}), { once: true });
      },
    });
    spans?.model(prepared.model);
    projection = new RunProjection(rt, prepared, events, spec.runId, {
      reasoning: choices.reasoning,
      verbose: choices.verbose,
      blockStreaming: choices.blockStreaming,
    });
    const context = new RunContextGuard({
      rt,
      prepared,
      events,
      projection,
      signal: control.signal,
      runId: spec.runId,
      timeoutMs: choices.timeoutMs,
    });
    exec = await executeRun({
      rt,
      spec,
      prepared,
      choices,
      signal: control.signal,
      events,
      projection,
      context,
      spans,
    });
  } catch (err) {
    setupError = err instanceof Error ? err : new Error(String(err));
  }
  try {
    // under the session write lock still: the run's last row (its partial answer, its failure) is written here
    if (projection && prepared) await endTranscript(projection, control.signal, exec, setupError, prepared.model.ref);
  } catch (err) {
    rt.logger.warn(`run ${spec.runId}: writing how the run ended to the transcript: ${(err as Error).message}`);
  } finally {
    spec.onLoopEnd?.();
    projection?.close();
    control.dispose();
  }
  let finish: FinishInput = {
    spec,
    startedAt,
    laneWaitMs,
    signal: control.signal,
    exec,
    setupError,
    modelRef: prepared?.model.ref ?? choices.modelRef,
    profile: prepared?.profile,
    written: projection?.written ?? [],
    parts: projection?.parts,
    options: { reasoning: choices.reasoning, verbose: choices.verbose },
    deliveredByBlocks: projection?.deliveredByBlocks() ?? "",
  };
  let result: RunResult | undefined;
  try {
    result = await finishResult(rt, finish);
    // still under the session write lock: the answer, with the run's end in the same commit when the queue writes
    // it (RunSpec.recordEnd), before anyone is told the run ended
    const outcome = result;
    const recordEnd = spec.recordEnd;
    await projection?.endWithAnswer(recordEnd && ((rows) => recordEnd(outcome, rows)));
  } catch (err) {
    if (result === undefined) {
      await projection?.endWithAnswer().catch(() => {});
      throw err;
    }
    rt.logger.warn(`run ${spec.runId}: writing the answer to the transcript: ${(err as Error).message}`);
    // not even alone (the disk is full): the run failed, as one does when any of its rows cannot be stored
    if (exec?.kind === "loop" && projection) {
      const error = err instanceof Error ? err : new Error(String(err));
      finish = { ...finish, exec: { ...exec, outcome: { ...exec.outcome, stopReason: "error", error } } };
      result = await finishResult(rt, finish);
      const model = prepared?.model.ref ?? result.model;
      await endTranscript(projection, control.signal, finish.exec, setupError, model).catch(() => {});
    }
  } finally {
    if (lock) await lock.release().catch((e) => rt.logger.warn(`releasing session write lock: ${e.message}`));
  }
  return announceFinish(rt, events, finish, result);
}

/** The run's failure (error, timeout, abort) is recorded in its transcript: see RunProjection.end. */
async function endTranscript(
  projection: RunProjection,
  signal: AbortSignal,
  exec: ExecuteResult | undefined,
  setupError: Error | undefined,
  model: string,
): Promise<void> {
  const { status, error } = statusOf(classifyOutcome(signal, exec, setupError));
  projection.end(status === "ok" || !error ? undefined : { message: error.message, kind: error.kind, model });
  await projection.flushed();
}

function failedTurn(spec: RunSpec, startedAt: number, endedAt: number, err: unknown): RunResult {
  const message = err instanceof Error ? err.message : String(err);
  const aborted = spec.signal?.aborted === true;
  const status = aborted ? "aborted" : "error";
  // stopped before it got its lanes by another client's /stop or interrupt: its client still learns who and how
  const endedBy = aborted ? endedByOf(spec.signal) : undefined;
  return {
    ...modelFreeResult(spec, startedAt, endedAt),
    status,
    stopReason: status,
    payloads: aborted ? [] : [{ text: `⚠️ ${message}`, kind: "error" }],
    model: spec.model ?? "",
    error: { message, kind: aborted ? "aborted" : errorKind(err) },
    ...(endedBy ? { endedBy } : {}),
  };
}

/** The fields of a result no model call contributed to: no usage, no steps, no lane wait. */
function modelFreeResult(spec: RunSpec, startedAt: number, endedAt: number): RunResult {
  return {
    runId: spec.runId,
    sessionKey: spec.sessionKey,
    status: "ok",
    stopReason: "command",
    payloads: [],
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    startedAt,
    endedAt,
    durationMs: endedAt - startedAt,
    laneWaitMs: 0,
    steps: 0,
    model: "",
  };
}

/** A turn answered without the model (slash commands): still a full lifecycle, so waiters and clients see it end. */
function synthetic(rt: TurnPorts, spec: RunSpec, startedAt: number, text: string): RunResult {
  const events = runEmitter(rt.bus, spec.runId, spec.sessionKey);
  events.emit("lifecycle", { phase: "start", startedAt });
  events.emit("assistant", { text, delta: text });
  const result: RunResult = { ...modelFreeResult(spec, startedAt, rt.clock.now()), payloads: [{ text }] };
  emitTerminal(events, result);
  return result;
}

/**
 * The session reuses its skills snapshot between runs; it is retaken after /new or /reset, or when the skill
 * folders changed (fingerprint of listings + SKILL.md mtimes, no file reads), so a deleted skill is never offered.
 */
async function sessionSkills(
  rt: TurnPorts,
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
  const { snapshot, reused } = await resolveSkillSnapshot({
    previous,
    dirs,
    reset,
    now: new Date(rt.clock.now()),
    fingerprint: (d) => rt.bootstrap.skillsFingerprint(d),
  });
  if (!reused) {
    for (const w of snapshot.warnings) rt.logger.warn(w);
    await rt.store.updateSession(sessionKey, { skillsSnapshot: JSON.stringify(snapshot) });
  }
  // an operator's switch (skills.update) acts on the next run without retaking the snapshot (a fleet: whichever node)
  const fresh = rt.enabledOverrides.refresh();
  if (fresh) await fresh;
  const enabled = snapshot.skills.filter((s) => rt.enabledOverrides.get("skills", s.name) !== false);
  return enabled.length === snapshot.skills.length ? snapshot : { ...snapshot, skills: enabled };
}
