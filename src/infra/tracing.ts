/**
 * OpenTelemetry helpers, through `@opentelemetry/api` only (SPEC 20). Loopgate never registers an SDK: until the
 * user preloads one (docs/observability.md) nothing here is even loaded (`tracing-gate.ts` decides, once per run).
 * With an SDK, a run whose span does not record (the sampler dropped it) gets no child spans and no wrappers.
 *
 * Spans are parented explicitly (each child is started under its parent's context, passed by hand), not through
 * the active context: the loop is an async generator and tool calls run in parallel, so "the active span" is not a
 * reliable parent there, and explicit parents nest correctly even when no context manager is registered. The work
 * inside a model call or a tool call does run with its span active, so spans of third-party instrumentation (an
 * SDK's own client span, HTTP) nest under ours when the user registers a context manager.
 */
import {
  type Attributes,
  type Context,
  context,
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";

export { type Context, type Span, SpanKind };

/** The instrumentation scope of every Loopgate span. */
export const TRACER_NAME = "loopgate";

/** Attribute names (OpenTelemetry GenAI semantic conventions, and Loopgate's own under `loopgate.*`). */
export const ATTR = {
  operation: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  agentId: "gen_ai.agent.id",
  agentName: "gen_ai.agent.name",
  conversationId: "gen_ai.conversation.id",
  requestModel: "gen_ai.request.model",
  requestMaxTokens: "gen_ai.request.max_tokens",
  responseModel: "gen_ai.response.model",
  finishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  cacheReadTokens: "gen_ai.usage.cache_read.input_tokens",
  cacheWriteTokens: "gen_ai.usage.cache_creation.input_tokens",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  errorType: "error.type",
  serverAddress: "server.address",
  serverPort: "server.port",
  runId: "loopgate.run.id",
  runStatus: "loopgate.run.status",
  lane: "loopgate.lane",
  laneWaitMs: "loopgate.lane_wait_ms",
  model: "loopgate.model",
  providerId: "loopgate.provider.id",
  attemptNumber: "loopgate.attempt.number",
  attemptReason: "loopgate.attempt.reason",
  retryReason: "loopgate.retry.reason",
  fallbackReason: "loopgate.fallback.reason",
  fallbackFrom: "loopgate.fallback.from",
  stopReason: "loopgate.stop_reason",
  step: "loopgate.step",
} as const;

/**
 * Starts a span whose parent is `parent` (the active context when omitted). Returns undefined when the span does not
 * record (no SDK registered, or the sampler dropped it): the caller then skips everything it would have traced.
 */
export function startRecordingSpan(
  name: string,
  opts: { kind: SpanKind; attributes: Attributes; parent?: Context; links?: Link[] },
): Span | undefined {
  const tracer = trace.getTracer(TRACER_NAME);
  const span = tracer.startSpan(
    name,
    { kind: opts.kind, attributes: opts.attributes, links: opts.links },
    opts.parent ?? context.active(),
  );
  if (span.isRecording()) return span;
  span.end();
  return undefined;
}

/** A child of `parent`'s context (always started: a recording parent means tracing is on for this run). */
export function startChildSpan(
  parent: Context,
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  links?: Link[],
): Span {
  return trace.getTracer(TRACER_NAME).startSpan(name, { kind, attributes, links }, parent);
}

/** The context that makes `span` the parent of what is started under it. */
export function contextOf(span: Span, base: Context = context.active()): Context {
  return trace.setSpan(base, span);
}

/** Runs `fn` with `ctx` active (for third-party spans started inside it, when a context manager is registered). */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/**
 * Ends `span` as failed. `errorType` is a kind (`rate_limit`, `timeout`, `tool_error`…), never a message: messages
 * can hold prompts, paths or secrets, so neither they nor the exception are recorded.
 */
export function endFailed(span: Span, errorType: string): void {
  span.setAttribute(ATTR.errorType, errorType);
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** A low-cardinality name for a thrown value: its class name when it looks like one, else `_OTHER`. */
export function errorClassName(err: unknown): string {
  const name = err instanceof Error ? err.name : undefined;
  return name && /^[A-Za-z_$][\w$.]{0,63}$/.test(name) ? name : "_OTHER";
}
