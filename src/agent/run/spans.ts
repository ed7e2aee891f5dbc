/**
 * The run's OpenTelemetry spans (SPEC 20): `invoke_agent <agent>` for the run, one `attempt <provider/model>` per
 * try of the loop (first, retry, fallback, after compaction), `chat <model>` per model call and `execute_tool <name>`
 * per tool call, with the GenAI semantic-convention attributes. No prompt, message, argument or result text is ever
 * put on a span, and errors are recorded as kinds, never as messages.
 *
 * The loop stays pure: model calls are traced by wrapping the provider it is given (as the idle watchdog does) and
 * tool calls by wrapping the tools it is given. A run whose span does not record (no SDK registered) gets no
 * `RunSpans` at all, so no wrapper exists and nothing here runs per call or per token.
 */
import {
  ATTR,
  type Context,
  contextOf,
  endFailed,
  errorClassName,
  type Span,
  SpanKind,
  startChildSpan,
  startRecordingSpan,
  withContext,
} from "../../infra/tracing.js";
import type { ResolvedModel } from "../../providers/registry.js";
import {
  type ApiKind,
  type ModelProvider,
  type ModelStreamEvent,
  ProviderError,
  type Usage,
} from "../../providers/types.js";
import type { Tool, ToolOutput } from "../../tools/types.js";
import type { RunResult, RunSpec } from "./spec.js";

/** Why an attempt is made: the first try, or what threw the previous one away. */
export type AttemptCause =
  | { reason: "first" }
  | { reason: "retry"; retryReason: string }
  | { reason: "fallback"; fallbackReason: string; from: string }
  | { reason: "compaction" };

/** `gen_ai.provider.name`: the wire API's family, the "telemetry flavour" the conventions key on. */
export function genAiProviderName(api: ApiKind): string {
  if (api === "anthropic-messages") return "anthropic";
  if (api === "openai-completions" || api === "openai-responses") return "openai";
  return `loopgate.${api}`;
}

/** The spans of one run; absent (undefined) when tracing is off. */
export class RunSpans {
  readonly context: Context;
  private attempts = 0;
  private cause: AttemptCause = { reason: "first" };

  private constructor(private readonly span: Span) {
    this.context = contextOf(span);
  }

  /**
   * Starts the run span, or returns undefined when it does not record: that is the one check per run that decides
   * whether anything else is traced.
   */
  static start(spec: RunSpec, agentName: string | undefined): RunSpans | undefined {
    const span = startRecordingSpan(`invoke_agent ${agentName ?? spec.agentId}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [ATTR.operation]: "invoke_agent",
        [ATTR.agentId]: spec.agentId,
        [ATTR.agentName]: agentName ?? spec.agentId,
        [ATTR.runId]: spec.runId,
        ...(spec.lane ? { [ATTR.lane]: spec.lane } : {}),
      },
    });
    return span ? new RunSpans(span) : undefined;
  }

  /**
   * The session's id, not its key: a key is chosen by clients and channels and can hold user data (a phone number,
   * a chat handle); the id is an opaque id the store made, and a new one starts with /new and /reset, which is
   * what a conversation is.
   */
  conversation(sessionId: string): void {
    this.span.setAttribute(ATTR.conversationId, sessionId);
  }

  /** The model the run starts on (known once the turn resolved it). */
  model(model: ResolvedModel): void {
    this.span.setAttribute(ATTR.providerName, genAiProviderName(model.api));
    this.span.setAttribute(ATTR.requestModel, model.modelId);
  }

  /** The next attempt is made because of `cause` (a retry, a fallback, a compaction). */
  nextAttemptCause(cause: AttemptCause): void {
    this.cause = cause;
  }

  /** Starts the span of the next attempt, on `model`. */
  attempt(model: ResolvedModel): AttemptSpans {
    const cause = this.cause;
    this.cause = { reason: "first" };
    this.attempts++;
    const span = startChildSpan(this.context, `attempt ${model.ref}`, SpanKind.INTERNAL, {
      [ATTR.attemptNumber]: this.attempts,
      [ATTR.attemptReason]: cause.reason,
      ...(cause.reason === "retry" ? { [ATTR.retryReason]: cause.retryReason } : {}),
      ...(cause.reason === "fallback"
        ? { [ATTR.fallbackReason]: cause.fallbackReason, [ATTR.fallbackFrom]: cause.from }
        : {}),
      [ATTR.providerName]: genAiProviderName(model.api),
      [ATTR.providerId]: model.providerId,
      [ATTR.requestModel]: model.modelId,
    });
    return new AttemptSpans(span, model);
  }

  /** Ends the run span with the run's result: status, the model that answered, the usage of every call. */
  end(result: RunResult): void {
    const span = this.span;
    span.setAttribute(ATTR.runStatus, result.status);
    span.setAttribute(ATTR.stopReason, result.stopReason);
    span.setAttribute(ATTR.laneWaitMs, result.laneWaitMs);
    if (result.model) span.setAttribute(ATTR.model, result.model);
    setUsage(span, result.usage);
    // a cancelled run is not a failure (status unset; loopgate.run.status says "aborted")
    if (result.status === "error" || result.status === "timeout") endFailed(span, result.error?.kind ?? result.status);
    else span.end();
  }
}

/** One attempt: the parent of its model calls and tool calls. */
export class AttemptSpans {
  readonly context: Context;
  /** model calls so far in this attempt: the loop's step number */
  private step = 0;
  /** the model call whose tool calls run now (a tool span links to it) */
  private lastChat?: Span;

  constructor(
    private readonly span: Span,
    private readonly model: ResolvedModel,
  ) {
    this.context = contextOf(span);
  }

  /** Ends the attempt with how the loop ended (`errorKind` when it failed). */
  end(stopReason: string, errorKind?: string): void {
    this.span.setAttribute(ATTR.stopReason, stopReason);
    if (errorKind !== undefined) endFailed(this.span, errorKind);
    else this.span.end();
  }

  /** The provider with a `chat <model>` span around each call. Streamed events pass through untouched. */
  provider(inner: ModelProvider): ModelProvider {
    return {
      id: inner.id,
      api: inner.api,
      stream: (request) => this.tracedStream(inner, request),
    };
  }

  /** The tools with an `execute_tool <name>` span around each execution. */
  tools(tools: ReadonlyMap<string, Tool>): ReadonlyMap<string, Tool> {
    const traced = new Map<string, Tool>();
    for (const [name, tool] of tools) {
      traced.set(name, {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        // kept, so the call is checked with the tool's own schema (tools/validate.ts)
        argsSchema: tool.argsSchema,
        source: tool.source,
        concurrency: tool.concurrency,
        execute: (args, ctx) => this.tracedTool(tool, args, ctx),
      });
    }
    return traced;
  }

  private async *tracedStream(
    inner: ModelProvider,
    request: Parameters<ModelProvider["stream"]>[0],
  ): AsyncGenerator<ModelStreamEvent> {
    const model = this.model;
    const span = startChildSpan(this.context, `chat ${request.model}`, SpanKind.CLIENT, {
      [ATTR.operation]: "chat",
      [ATTR.providerName]: genAiProviderName(model.api),
      [ATTR.providerId]: model.providerId,
      [ATTR.requestModel]: request.model,
      [ATTR.step]: ++this.step,
      ...(request.maxTokens ? { [ATTR.requestMaxTokens]: request.maxTokens } : {}),
      ...serverAttributes(model.baseUrl),
    });
    this.lastChat = span;
    const iterator = inner.stream(request)[Symbol.asyncIterator]();
    let finish: Extract<ModelStreamEvent, { type: "done" }> | undefined;
    let exhausted = false;
    let failed = false;
    try {
      // The first pull sends the request: it runs with the chat span active, so a provider SDK's own span (the
      // Anthropic SDK makes one) and HTTP instrumentation nest under it when a context manager is registered.
      let next = await withContext(contextOf(span, this.context), () => iterator.next());
      while (!next.done) {
        // the one check per event: no span is touched until the stream's end
        if (next.value.type === "done") finish = next.value;
        yield next.value;
        next = await iterator.next();
      }
      exhausted = true;
    } catch (err) {
      failed = true;
      endFailed(span, modelErrorType(err, request.signal));
      throw err;
    } finally {
      if (!failed) {
        // the consumer stopped pulling (abort): let the provider clean up
        if (!exhausted) await iterator.return?.(undefined);
        if (finish) {
          span.setAttribute(ATTR.finishReasons, [finish.stopReason]);
          span.setAttribute(ATTR.responseModel, finish.model ?? request.model);
          setUsage(span, finish.usage);
          span.end();
        } else endFailed(span, request.signal.aborted ? "aborted" : "_OTHER");
      }
    }
  }

  private async tracedTool(
    tool: Tool,
    args: Record<string, unknown>,
    ctx: Parameters<Tool["execute"]>[1],
  ): Promise<ToolOutput> {
    const requestedBy = this.lastChat?.spanContext();
    const span = startChildSpan(
      this.context,
      `execute_tool ${tool.name}`,
      SpanKind.INTERNAL,
      {
        [ATTR.operation]: "execute_tool",
        [ATTR.toolName]: tool.name,
        [ATTR.toolType]: "function",
        [ATTR.step]: this.step,
        ...(ctx.toolCallId ? { [ATTR.toolCallId]: ctx.toolCallId } : {}),
      },
      // a tool call runs after the model call that asked for it ended, so it is its sibling, linked to it
      requestedBy ? [{ context: requestedBy }] : undefined,
    );
    let out: ToolOutput;
    try {
      out = await withContext(contextOf(span, this.context), () => tool.execute(args, ctx));
    } catch (err) {
      endFailed(span, ctx.signal.aborted ? "aborted" : errorClassName(err));
      throw err;
    }
    if (out.isError) endFailed(span, "tool_error");
    else span.end();
    return out;
  }
}

/** `error.type` of a failed model call: the provider error's kind (rate_limit, timeout, server, auth, …). */
function modelErrorType(err: unknown, signal: AbortSignal): string {
  if (err instanceof ProviderError) return err.kind;
  if (signal.aborted) return "aborted";
  return errorClassName(err);
}

/** Token usage per the conventions: input counts every input token, cached ones included. */
function setUsage(span: Span, usage: Usage): void {
  span.setAttribute(ATTR.inputTokens, usage.input + usage.cacheRead + usage.cacheWrite);
  span.setAttribute(ATTR.outputTokens, usage.output);
  if (usage.cacheRead) span.setAttribute(ATTR.cacheReadTokens, usage.cacheRead);
  if (usage.cacheWrite) span.setAttribute(ATTR.cacheWriteTokens, usage.cacheWrite);
}

/** server.address / server.port of the provider's base URL (the host only: never its path, query or credentials). */
function serverAttributes(baseUrl: string | undefined): Record<string, string | number> {
  if (!baseUrl) return {};
  try {
    const url = new URL(baseUrl);
    const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
    return { [ATTR.serverAddress]: url.hostname, [ATTR.serverPort]: port };
  } catch {
    return {};
  }
}
