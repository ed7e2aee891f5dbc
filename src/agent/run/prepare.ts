import { eligibleSkills, formatSkillsPrompt, type SkillSnapshot, skillsEnv } from "../../prompt/skills.js";
import { buildSystemPrompt } from "../../prompt/system-prompt.js";
import type { BlockStreamingBreak } from "../../protocol/agent-events.js";
import type { ReasoningLevel, VerboseLevel } from "../../protocol/enums.js";
import type { ExecApprovalRequested, ExecApprovalResolved } from "../../protocol/exec-approvals.js";
import { acceptsImages } from "../../providers/image-input.js";
import type { ResolvedModel } from "../../providers/registry.js";
import type { ChatMessage, ThinkingLevel, UserMessage } from "../../providers/types.js";
import { userContent } from "../../queue/user-content.js";
import type { SessionLockHandle } from "../../session/lock-port.js";
import { resolveMaxHoldMs } from "../../session/write-lock.js";
import { type EffectiveExecPolicy, effectiveExecPolicy } from "../../tools/sandbox/exec-policy.js";
import { decideSandbox, sandboxSettings } from "../../tools/sandbox/settings.js";
import { SANDBOX_WORKDIR } from "../../tools/sandbox/types.js";
import { redactSecrets, redactText } from "../../tools/sanitize.js";
import type { ToolContext } from "../../tools/types.js";
import { type RunProfile, resolveRunProfile } from "../profile/profile.js";
import { RunSetupError } from "./errors.js";
import type { RunEmitter } from "./events.js";
import type { RunPorts, TurnPorts } from "./ports.js";
import type { RunSpec } from "./spec.js";

export type SessionLock = SessionLockHandle;

/** What the turn resolved before the run: the model ref after hooks, thinking, timeout and the skills snapshot. */
export interface TurnChoices {
  modelRef: string;
  thinking: ThinkingLevel;
  /** what the run shows of the model's reasoning, and its inline tool summaries */
  reasoning: ReasoningLevel;
  verbose: VerboseLevel;
  timeoutMs: number;
  skills: SkillSnapshot;
  /** the run streams its reply as blocks, sent at this break (undefined: block streaming is off) */
  blockStreaming?: BlockStreamingBreak;
  /** `/compact [instructions]`: compact the session's history now instead of calling the model */
  compact?: { instructions?: string };
}

/** Everything execute needs, resolved once before the first model call. */
export interface PreparedRun {
  /** what the run may use: tools, model chain, workspace (and the slots the next issues fill) */
  profile: RunProfile;
  /** the model the turn resolved (the profile's first) */
  model: ResolvedModel;
  workspaceDir: string;
  lock: SessionLock;
  history: ChatMessage[];
  /** transcript seq of each history message (0: the summary of a compaction) */
  historySeqs: number[];
  /** what the user wrote: the transcript keeps this */
  userMessage: UserMessage;
  /** what the model sees (before_prompt_build may prepend context) */
  modelUserMessage: UserMessage;
  system: string;
  toolEnv?: Record<string, string>;
  /** the exec tool's policy check for this run (tools.exec): waits for approval when the policy asks */
  approveExec: NonNullable<ToolContext["approveExec"]>;
  /** a tool that needs an operator (an MCP server's `approval`) waits here, in the same registry as exec's */
  approveTool: NonNullable<ToolContext["approveTool"]>;
  hookCtx: { agentId: string; sessionKey: string; runId: string; workspaceDir: string };
}

/**
 * Prepare: model, workspace, write lock, history, skills, bootstrap files, before_* hooks and the system prompt.
 * The write lock is taken before anything is streamed or written and is handed to the caller, who releases it
 * after the last row is down; if preparing fails after the lock was taken, it is released here.
 */
export async function prepareRun(
  rt: TurnPorts,
  spec: RunSpec,
  choices: TurnChoices,
  run: { signal: AbortSignal; events: RunEmitter; onLock: (lock: SessionLock) => void },
): Promise<PreparedRun> {
  const profile = await resolveRunProfile(rt, {
    agentId: spec.agentId,
    modelRef: choices.modelRef,
    sessionKey: spec.sessionKey,
    authProfile: spec.authProfile,
    authHooks: {
      // ids and the error kind only: a rotation never names a key
      rotated: ({ from, to, reason }) => run.events.emit("lifecycle", { phase: "auth_rotate", from, to, reason }),
      warn: (message, fields) => rt.logger.warn(message, fields),
    },
    ...(spec.token !== undefined ? { token: spec.token } : {}),
  });
  const model = profile.model;
  const images = spec.images ?? [];
  if (images.length > 0 && !acceptsImages(model.api, model.model)) {
    // refused before the session lock is taken or anything is written: the user's row would hold images the model never saw
    throw new RunSetupError(
      "unsupported_input",
      `model ${model.ref} does not accept images (its models[] entry has no "image" in input): ${images.length} image attachment(s) not sent`,
    );
  }
  await rt.getProvider(model.providerId); // a misconfigured provider fails the run before the lock is taken
  const workspace = { dir: profile.workspaceDir };
  let waited = false;
  const lock = await rt.sessionLocks.acquire(spec.sessionKey, {
    maxHoldMs: resolveMaxHoldMs(choices.timeoutMs),
    signal: run.signal,
    // Clients show what the run waits for; the lock path stays on the server.
    onWait: ({ holderPid }) => {
      waited = true;
      run.events.emit("lifecycle", { phase: "waiting", for: "session_lock", holderPid });
    },
  });
  run.onLock(lock);
  if (waited) run.events.emit("lifecycle", { phase: "waiting", for: "model", model: model.ref });
  const { messages: history, seqs: historySeqs, session } = await rt.history.load(rt.store, spec.sessionKey);
  // the row was read under the write lock just taken: the key chooser starts from its pins (no second read)
  if (session) profile.credentials?.knowSession(session);
  const hookCtx = {
    agentId: spec.agentId,
    sessionKey: spec.sessionKey,
    runId: spec.runId,
    workspaceDir: workspace.dir,
  };
  // Skills whose required env vars are missing are not offered: the model could not use them.
  const skills = eligibleSkills(choices.skills.skills ?? [], rt.env).eligible;
  const userMessage: UserMessage = { role: "user", content: userContent(spec.message, images) };
  const prompt = await promptFor(rt, spec, profile, skills, history, userMessage);
  const onWaiting = (req: ExecApprovalRequested) =>
    run.events.emit("lifecycle", {
      phase: "waiting",
      for: "approval",
      approvalId: req.id,
      command: redactText(req.command),
      expiresAtMs: req.expiresAtMs,
      reason: redactText(req.reason),
      ...(req.kind === "tool" ? { kind: "tool" as const, tool: req.tool } : {}),
      ...(req.sandbox ? { sandbox: req.sandbox } : {}),
    });
  // a client that showed the wait says how it ended, and resumes its own display (a paused status line)
  const onSettled = (resolved: ExecApprovalResolved) =>
    run.events.emit("lifecycle", {
      phase: "resumed",
      for: "approval",
      approvalId: resolved.id,
      status: resolved.status,
      ...(resolved.decision ? { decision: resolved.decision } : {}),
    });
  const effective = runExecPolicy(rt, spec, profile);
  const asked = {
    agentId: spec.agentId,
    sessionKey: spec.sessionKey,
    runId: spec.runId,
    cwd: profile.sandbox ? `${SANDBOX_WORKDIR} (${profile.sandbox.sandbox.backend} sandbox)` : workspace.dir,
  };
  return {
    profile,
    model,
    workspaceDir: workspace.dir,
    lock,
    history,
    historySeqs,
    userMessage,
    modelUserMessage: prompt.modelUserMessage,
    system: prompt.system,
    toolEnv: skills.length ? skillsEnv(skills) : undefined,
    // clients show what the run waits for, and approvers find the id in the `waiting` event too; an event, so
    // masked (only the approval request itself, for approvers, carries the exact command)
    approveExec: ({ command, toolCallId, signal }) =>
      rt.execApprovals.check({ ...asked, command, toolCallId, signal, onWaiting, onSettled, effective }),
    // a tool's arguments are shown to approvers with credential-like values redacted (they are data, not a
    // command whose every byte the approver must read)
    approveTool: ({ tool, args, toolCallId, signal }) =>
      rt.execApprovals.askTool({
        ...asked,
        tool,
        args: redactSecrets(args),
        toolCallId,
        signal,
        onWaiting,
        onSettled,
      }),
    hookCtx,
  };
}

/** The run's exec policy: a sandboxed run's may differ from the process's (tools/sandbox/exec-policy.ts). */
function runExecPolicy(rt: TurnPorts, spec: RunSpec, profile: RunProfile): EffectiveExecPolicy {
  const decision = decideSandbox(sandboxSettings(rt.config, spec.agentId), spec.agentId, spec.sessionKey);
  return effectiveExecPolicy(
    rt.execApprovals.policy,
    rt.config.tools.exec.security !== undefined,
    decision,
    profile.sandbox,
  );
}

type Skills = ReturnType<typeof eligibleSkills>["eligible"];

/** Bootstrap files (agent:bootstrap may edit them), the system prompt, then before_prompt_build's changes. */
async function promptFor(
  rt: RunPorts,
  spec: RunSpec,
  profile: RunProfile,
  skills: Skills,
  history: ChatMessage[],
  userMessage: UserMessage,
): Promise<{ system: string; modelUserMessage: UserMessage }> {
  const { model, workspaceDir, tools } = profile;
  const mode = spec.promptMode ?? "full";
  const bootstrapFiles =
    mode === "full" ? await rt.bootstrap.load(workspaceDir, { onWarning: (m) => rt.logger.warn(m) }) : [];
  if (mode === "full") {
    await rt.fireInternal("agent", "bootstrap", {
      workspaceDir,
      bootstrapFiles,
      agentId: spec.agentId,
      sessionKey: spec.sessionKey,
    });
  }
  let system = buildSystemPrompt({
    mode,
    agentId: spec.agentId,
    // a sandboxed run's commands and file tools see the workspace at /workspace
    workspaceDir: profile.sandbox ? SANDBOX_WORKDIR : workspaceDir,
    tools: [...tools.values()].map((t) => ({ name: t.name, description: t.description })),
    skillsPrompt: mode === "full" ? formatSkillsPrompt(skills) : undefined,
    bootstrapFiles,
    extraSystemPrompt: spec.extraSystemPrompt,
    now: new Date(rt.clock.now()),
    runContext: { sessionKey: spec.sessionKey, model: model.ref },
  });
  let modelUserMessage = userMessage;
  const hooks = rt.pluginHooks;
  if (hooks.has("before_prompt_build")) {
    const hookCtx = { agentId: spec.agentId, sessionKey: spec.sessionKey, runId: spec.runId, workspaceDir };
    const r = await hooks.runBeforePromptBuild({ prompt: spec.message, messages: history }, hookCtx);
    if (r.systemPrompt !== undefined) system = r.systemPrompt;
    if (r.prependSystemContext) system = `${r.prependSystemContext}\n\n${system}`;
    if (r.appendSystemContext) system = `${system}\n\n${r.appendSystemContext}`;
    if (r.prependContext) {
      const text = `${r.prependContext}\n\n${spec.message}`;
      modelUserMessage = { role: "user", content: userContent(text, spec.images ?? []) };
    }
  }
  return { system, modelUserMessage };
}
