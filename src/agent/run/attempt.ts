import { withAuthProfiles } from "../../credentials/index.js";
import type { Beat } from "../../infra/cadence.js";
import { meteredProvider } from "../../limits/metered-provider.js";
import type { MeteredRun } from "../../limits/spend-control.js";
import { acceptsImages, textOnlyProvider } from "../../providers/image-input.js";
import type { ResolvedModel } from "../../providers/registry.js";
import {
  type ChatMessage,
  contentText,
  contentWithImageNotes,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  type ThinkingLevel,
} from "../../providers/types.js";
import { isCronRunWithTimeout } from "../../queue/types.js";
import { capForModel, omitInlineDataUrls } from "../../tools/sanitize.js";
import { resolveIdleTimeoutMs, withIdleWatchdog } from "../idle-watchdog.js";
import { type LoopOutcome, type LoopPorts, runAgentLoop } from "../loop.js";
import type { RunProfile } from "../profile/profile.js";
import type { ModelCallObserver } from "../runtime.js";
import { measuredProvider } from "./measured-provider.js";
import type { RunPorts } from "./ports.js";
import type { PreparedRun } from "./prepare.js";
import type { RunProjection } from "./projection.js";
import type { AttemptSpans } from "./spans.js";
import type { RunSpec } from "./spec.js";

/** One try of the inner loop against one model, from a given context. */
export interface AttemptInput {
  model: ResolvedModel;
  messages: ChatMessage[];
  thinking: ThinkingLevel;
  timeoutMs: number;
  signal: AbortSignal;
  transformContext?: LoopPorts["transformContext"];
  /** this attempt's spans; absent when tracing is off, and then nothing is wrapped */
  spans?: AttemptSpans;
}

/**
 * The provider for a model, behind the idle watchdog (SPEC 13: no chunk within the window aborts the call), measured
 * for /metrics when metrics are on, and (when the run is given) behind spend control: budgets checked before every
 * call, usage recorded after it.
 */
export async function providerFor(
  rt: RunPorts,
  model: ResolvedModel,
  runTimeoutMs: number,
  spec?: Pick<RunSpec, "lane" | "timeout">,
  profile?: Pick<RunProfile, "credentials">,
  metered?: MeteredRun,
): Promise<ModelProvider> {
  // the key per call from the run's auth profiles, rotated inside the call (credentials/keyed-provider.ts)
  const provider = withAuthProfiles(await rt.getProvider(model.providerId), profile?.credentials);
  const watched = withIdleWatchdog(
    // a model that reads no images gets a note in their place (providers/image-input.ts)
    acceptsImages(model.api, model.model) ? provider : textOnlyProvider(provider),
    resolveIdleTimeoutMs({
      selfHosted: rt.isSelfHosted(model),
      privateNetwork: rt.onPrivateNetwork(model),
      providerTimeoutMs: model.timeoutSeconds !== undefined ? model.timeoutSeconds * 1000 : undefined,
      runTimeoutMs,
      cronTimeout: spec !== undefined && isCronRunWithTimeout(spec),
    }),
    rt.clock,
  );
  // measured inside spend control: a call its budget refused never reached the provider, so it is not a model call
  return meteredProvider(rt.spend, metered, model, measuredProvider(rt.modelCallMeter, model, watched));
}

/** The run as spend control meters it: who spends, and the limits its profile resolved. */
export function meteredRun(spec: Pick<RunSpec, "runId" | "sessionKey" | "agentId">, prepared: PreparedRun): MeteredRun {
  const { limits, credentials } = prepared.profile;
  return { runId: spec.runId, sessionKey: spec.sessionKey, agentId: spec.agentId, limits, credentials };
}

/** The provider as is, or (when something observes model calls) telling it when each call starts and ends. */
function observedModelCalls(rt: RunPorts, spec: RunSpec, provider: ModelProvider): ModelProvider {
  const observer = rt.modelCalls;
  if (!observer) return provider;
  return {
    id: provider.id,
    api: provider.api,
    stream: (request) => observeStream(provider, request, observer, spec),
  };
}

async function* observeStream(
  provider: ModelProvider,
  request: ModelRequest,
  observer: ModelCallObserver,
  spec: RunSpec,
): AsyncGenerator<ModelStreamEvent> {
  observer.started(spec.runId, spec.sessionKey);
  try {
    yield* provider.stream(request);
  } finally {
    observer.ended(spec.runId, spec.sessionKey);
  }
}

/**
 * Every model request of the run carries the run's stream beat, the one its delta coalescer paces on
 * (run/turn.ts), so a provider that reads the network itself hands deltas on at the same beats.
 */
function pacedOnBeat(provider: ModelProvider, beat: Beat | undefined): ModelProvider {
  if (!beat) return provider;
  return { id: provider.id, api: provider.api, stream: (request) => provider.stream({ ...request, streamBeat: beat }) };
}

/** Runs the loop once, feeding every event to the projection; returns the loop's outcome. */
export async function runAttempt(
  rt: RunPorts,
  spec: RunSpec,
  prepared: PreparedRun,
  projection: RunProjection,
  input: AttemptInput,
): Promise<LoopOutcome> {
  const provider = await providerFor(
    rt,
    input.model,
    input.timeoutMs,
    spec,
    prepared.profile,
    meteredRun(spec, prepared),
  );
  const spans = input.spans;
  const loop = runAgentLoop(
    {
      model: input.model.modelId,
      system: prepared.system,
      messages: input.messages,
      maxSteps: rt.config.agents.defaults.maxSteps,
      // a model configured with `reasoning: false` would reject the parameters a thinking level adds
      thinking: input.model.model.reasoning === false ? "off" : input.thinking,
      maxTokens: input.model.model.maxTokens,
    },
    {
      // the chat span wraps the watchdog, so a model call it cut off ends as a timeout; the stuck-session
      // diagnostics' observer (when on) sees each call start and end
      provider: pacedOnBeat(
        observedModelCalls(rt, spec, spans ? spans.provider(provider) : provider),
        rt.runBeat(spec.runId),
      ),
      tools: spans ? spans.tools(prepared.profile.tools) : prepared.profile.tools,
      withheldTools: prepared.profile.withheld,
      signal: input.signal,
      toolContext: {
        workspaceDir: prepared.profile.workspaceDir,
        ...(prepared.profile.sandbox ? { sandbox: prepared.profile.sandbox } : {}),
        env: prepared.toolEnv,
        // the approval's `waiting` event follows the call's start event: a client that shows the call, then the
        // question, keeps the question on screen (a start drawn after it would replace it)
        approveExec: async (req) => {
          await projection.callStarted(req.toolCallId);
          return prepared.approveExec(req);
        },
        approveTool: async (req) => {
          await projection.callStarted(req.toolCallId);
          return prepared.approveTool(req);
        },
        sendMessage: (text, toolCallId) => projection.sendMessage(text, toolCallId),
      },
      steering: spec.steering,
      // an inline data URL in tool text is a placeholder for the model too (the events get the same one)
      resultForModel: (text) => capForModel(omitInlineDataUrls(text)),
      transformContext: input.transformContext,
      ...toolHooks(rt, prepared.hookCtx),
    },
  );
  while (true) {
    const next = await loop.next();
    if (next.done) return next.value;
    projection.onLoopEvent(next.value);
  }
}

/** before_tool_call / after_tool_call as loop ports; absent when no plugin listens, so they cost nothing. */
function toolHooks(rt: RunPorts, hookCtx: PreparedRun["hookCtx"]): Pick<LoopPorts, "beforeToolCall" | "afterToolCall"> {
  const hooks = rt.pluginHooks;
  return {
    beforeToolCall: hooks.has("before_tool_call")
      ? (call) => hooks.runBeforeToolCall({ toolName: call.name, params: call.arguments, toolCallId: call.id }, hookCtx)
      : undefined,
    afterToolCall: hooks.has("after_tool_call")
      ? (call, result) =>
          void hooks.runObservers(
            "after_tool_call",
            {
              toolName: call.name,
              params: call.arguments,
              toolCallId: call.id,
              // plugins get the text with a note per image, never the base64
              result: contentWithImageNotes(result.content),
              error: result.isError ? contentText(result.content) : undefined,
            },
            hookCtx,
          )
      : undefined,
  };
}
