/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`, streamed). Besides OpenAI itself this is the API that Ollama,
 * vLLM, llama.cpp, LM Studio, DeepSeek and most gateways speak, so it tolerates their variations: no API key,
 * reasoning text in `reasoning_content` or `reasoning`, tool calls without ids, usage in the finish chunk.
 *
 * It talks to the API with Node's own `http` (http-stream.ts) and a small SSE reader (sse.ts) rather than the `openai`
 * SDK or fetch: this is the hot path of every agent turn and of every streamed token, and both the SDK's per-request
 * machinery and fetch's per-read web-stream machinery cost more than the work itself.
 */
import { type ErrorContext, markAfterOutput, providerError, requestErrorContext, toProviderError } from "./errors.js";
import { postStreamed, type StreamedResponse } from "./http-stream.js";
import type { HeaderSource } from "./retry-after.js";
import type { SseEvent } from "./sse.js";
import { guardStream, type StreamGuard } from "./stream-guard.js";
import type {
  ChatMessage,
  ImageBlock,
  MessageContent,
  ModelProvider,
  ModelRequest,
  ModelStreamEvent,
  ProviderInit,
  StopReason,
  ToolSpec,
  Usage,
} from "./types.js";
import { emptyUsage } from "./types.js";
import {
  dataUrl,
  fallbackCallId,
  isOpenAIReasoningModel,
  openAIReasoningEffort,
  sendableParts,
  streamEndedEarly,
  toolCallEvent,
  usageOf,
} from "./wire.js";

const DEFAULT_BASE_URL = "https://api.openai.com/v1";

// --- the wire format (only the fields this provider writes or reads) ---------------------------------------------

interface ChatToolCallParam {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

type ChatMessageParam =
  | { role: "system"; content: string }
  | { role: "user"; content: string | UserPartParam[] }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCallParam[] }
  | { role: "tool"; tool_call_id: string; content: string };

type UserPartParam = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

interface ChatToolParam {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

interface ChunkToolCall {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

interface ChunkDelta {
  content?: string | null;
  /** reasoning text as DeepSeek, vLLM and llama.cpp send it */
  reasoning_content?: string | null;
  /** reasoning text as Ollama and OpenRouter send it */
  reasoning?: string | null;
  tool_calls?: ChunkToolCall[] | null;
}

interface ChunkUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
}

interface ChatChunk {
  choices?: Array<{ delta?: ChunkDelta | null; finish_reason?: string | null }> | null;
  usage?: ChunkUsage | null;
  /** the model that answers (tracing records it) */
  model?: string;
  /** an error reported in the middle of the stream instead of a chunk */
  error?: unknown;
}

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

/**
 * An error answer from the API (an HTTP error, or an error object in place of a chunk), carrying what the SDKs'
 * APIError carries: the HTTP status, the body's `error` member with its `code` and `type`, and a message of the form
 * "<status> <API message or body text>". errors.ts reads exactly these fields, so the mapping to ProviderError kinds
 * is the one shared by every provider.
 */
class ChatCompletionsApiError extends Error {
  readonly status: number | undefined;
  readonly error: unknown;
  readonly code: unknown;
  readonly type: unknown;
  /** the response's headers (Retry-After); none for an error sent in place of a chunk */
  readonly headers: HeaderSource | undefined;

  constructor(status: number | undefined, error: unknown, bodyText: string | undefined, headers?: HeaderSource) {
    super(apiErrorMessage(status, error, bodyText));
    this.name = "ChatCompletionsApiError";
    this.status = status;
    this.error = error;
    const fields = isRecord(error) ? error : undefined;
    this.code = fields?.code;
    this.type = fields?.type;
    this.headers = headers;
  }
}

function apiErrorMessage(status: number | undefined, error: unknown, bodyText: string | undefined): string {
  const apiMessage = isRecord(error) ? error.message : undefined;
  const text = apiMessage
    ? typeof apiMessage === "string"
      ? apiMessage
      : JSON.stringify(apiMessage)
    : error
      ? JSON.stringify(error)
      : bodyText;
  if (status && text) return `${status} ${text}`;
  if (status) return `${status} status code (no body)`;
  return text || "(no status code or body)";
}

/** The error answer of a response that is not 2xx: `{ error: { message, code, type } }`, or whatever text it sent. */
async function httpError(response: StreamedResponse): Promise<ChatCompletionsApiError> {
  const text = await response.text().catch((err: unknown) => (err instanceof Error ? err.message : String(err)));
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const error = isRecord(json) ? json.error : undefined;
  return new ChatCompletionsApiError(response.status, error, json ? undefined : text, response.headers);
}

// --- the provider ------------------------------------------------------------------------------------------------

export function createOpenAICompletionsProvider(init: ProviderInit): ModelProvider {
  const url = `${(init.baseUrl ?? DEFAULT_BASE_URL).replace(/\/$/, "")}/chat/completions`;
  const headers = requestHeaders(init, init.apiKey);
  return {
    id: init.id,
    api: "openai-completions",
    // a call with its own key (an auth profile's) gets its own Authorization; the configured headers still win
    stream: (request) =>
      new ChatStream(init, url, request.apiKey ? requestHeaders(init, request.apiKey) : headers, request),
  };
}

/** Authorization when there is a key, then the configured headers (which may replace it), then the content type. */
function requestHeaders(init: ProviderInit, apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  for (const [name, value] of Object.entries(init.headers ?? {})) headers[name.toLowerCase()] = value;
  headers["content-type"] = "application/json";
  return headers;
}

/**
 * One streamed call: the SSE chunks read off the response, turned into the provider's events.
 *
 * A plain async iterator, not an async generator: every batch of every model call passes here, and a generator
 * costs each event it yields a promise of its own, an `await` of the value and a resume, on top of the `await` of
 * the next batch (bench/README.md, "stream3"). Here an event already decoded costs one settled promise and a batch
 * one `then`. What the generator did and this keeps, step for step: nothing starts before the first `next()`; a
 * batch's chunks are decoded one at a time as the consumer asks, and a run cancelled (or stalled) between two of them
 * stops at the next (the connection closed, "stream interrupted"); an error from the body's chunks closes the
 * connection; text merged for the beat is delivered before an error the server sends in the stream; `return()` (a
 * consumer that stops early) closes the connection and the guard; every failure is mapped by `toProviderError`,
 * and marked as coming after output when the consumer already had an event (what `flagOutput` does for the
 * providers that stream through an SDK).
 */
class ChatStream implements AsyncIterableIterator<ModelStreamEvent> {
  private guard: StreamGuard | undefined;
  private ctx: ErrorContext | undefined;
  private batches: AsyncIterator<SseEvent[]> | undefined;
  /** the batch being decoded, and the next chunk of it to decode */
  private batch: SseEvent[] | undefined;
  private at = 0;
  /** decoded events not yet taken (a chunk can make several), from `head` on */
  private out: ModelStreamEvent[] = [];
  private head = 0;
  /** an error to throw once the events decoded before it are taken */
  private pendingError: unknown;
  /** the end was decoded or the stream failed or was closed: nothing more to read */
  private over = false;
  /** the consumer took an event other than the end */
  private output = false;

  private readonly calls = new Map<number, PendingCall>();
  private thinking = "";
  private finishReason: string | undefined;
  private toolCallCount = 0;
  private usage: Usage = emptyUsage();
  private sawDone = false;
  private answeredBy: string | undefined;
  /** text of this batch not yet handed on (consecutive text of one batch goes on as one delta on the beat) */
  private text = "";
  private readonly merge: boolean;

  constructor(
    private readonly init: ProviderInit,
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly request: ModelRequest,
  ) {
    // On the stream beat, consecutive text of one batch goes on as one delta: a batch is then everything that came
    // since the loop last took some, and past this point every delta costs a pass through the loop, the run and its
    // events. Without a beat (coalescing off) every chunk stays a delta of its own.
    this.merge = request.streamBeat !== undefined;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<ModelStreamEvent> {
    return this;
  }

  next(): Promise<IteratorResult<ModelStreamEvent>> {
    if (this.head < this.out.length) return Promise.resolve(this.take());
    if (this.pendingError !== undefined) return this.fail(this.pendingError, true);
    if (this.over) return Promise.resolve(DONE);
    if (this.guard === undefined) return this.open();
    return this.advance();
  }

  return(): Promise<IteratorResult<ModelStreamEvent>> {
    // not started, or over: nothing to close (a generator asked to return before its first next never runs)
    if (this.guard === undefined || this.over) {
      this.over = true;
      return Promise.resolve(DONE);
    }
    this.over = true;
    this.out = [];
    this.head = 0;
    this.pendingError = undefined;
    this.closeBody();
    this.guard.dispose();
    return Promise.resolve(DONE);
  }

  private open(): Promise<IteratorResult<ModelStreamEvent>> {
    // the guard's signal covers the whole exchange: connect, response headers, and every wait for the next chunk
    const guard = guardStream(this.request.signal, this.init.timeoutMs);
    this.guard = guard;
    this.ctx = requestErrorContext(this.init, this.request);
    let posted: Promise<StreamedResponse>;
    try {
      posted = postStreamed(this.url, this.headers, requestBody(this.request), guard.signal);
    } catch (err) {
      return this.fail(err, false);
    }
    return posted.then(
      (response) => {
        if (response.status < 200 || response.status > 299) {
          return httpError(response).then((err) => this.fail(err, false));
        }
        this.batches = response.sseBatches(this.request.streamBeat)[Symbol.asyncIterator]();
        return this.advance();
      },
      (err: unknown) => this.fail(err, false),
    );
  }

  /** Decodes what is in hand until an event comes out, else waits for the next batch. */
  private advance(): Promise<IteratorResult<ModelStreamEvent>> {
    let decoded: boolean;
    try {
      decoded = this.decode();
    } catch (err) {
      return this.fail(err, true);
    }
    if (decoded) return this.next();
    return (this.batches as AsyncIterator<SseEvent[]>).next().then(this.onBatch, this.onReadError);
  }

  private readonly onBatch = (result: IteratorResult<SseEvent[]>): Promise<IteratorResult<ModelStreamEvent>> => {
    if (result.done) {
      this.batches = undefined;
      return this.end();
    }
    (this.guard as StreamGuard).touch();
    this.batch = result.value;
    this.at = 0;
    return this.advance();
  };

  private readonly onReadError = (err: unknown): Promise<IteratorResult<ModelStreamEvent>> => {
    // a read that failed ends the body's iteration: there is nothing to close
    this.batches = undefined;
    return this.fail(err, false);
  };

  /**
   * Decodes chunks of the current batch until at least one event is out or the batch is used up (then its merged
   * text goes out, and the batch is dropped). True when there are events to take; throws what a chunk says is wrong.
   */
  private decode(): boolean {
    const batch = this.batch;
    if (batch === undefined) return false;
    const signal = (this.guard as StreamGuard).signal;
    while (this.at < batch.length) {
      // a consumer that was slow to take the last event may come back after a cancel or a stall
      if (signal.aborted) {
        this.batch = undefined;
        this.closeBody();
        throw this.interrupted();
      }
      this.chunk(batch[this.at++].data);
      if (this.head < this.out.length || this.pendingError !== undefined) return true;
    }
    this.batch = undefined;
    if (this.text !== "") {
      this.emit({ type: "text_delta", delta: this.text });
      this.text = "";
      return true;
    }
    return false;
  }

  /** One SSE event's data: what it adds to the stream (events in `out`, state), as the Chat Completions wire says. */
  private chunk(data: string): void {
    // the rest of the body after [DONE] is still read (and ignored) so the connection can be reused
    if (this.sawDone) return;
    if (data.startsWith("[DONE]")) {
      this.sawDone = true;
      return;
    }
    const parsed: unknown = JSON.parse(data);
    if (!isRecord(parsed)) {
      throw providerError(
        this.ctx as ErrorContext,
        "bad_response",
        `a stream chunk that is not a JSON object: ${clip(data)}`,
      );
    }
    const { error, usage: chunkUsage, choices, model } = parsed as ChatChunk;
    if (typeof model === "string" && model) this.answeredBy = model;
    if (error) {
      // what streamed before the error was seen by the user as it came: it is delivered before the failure
      this.flushText();
      this.pendingError = new ChatCompletionsApiError(undefined, error, undefined);
      return;
    }
    if (chunkUsage) this.usage = mapUsage(chunkUsage);
    const choice = choices?.[0];
    if (!choice) return;
    const delta = choice.delta ?? {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (reasoning) {
      this.flushText();
      this.thinking += reasoning;
      this.emit({ type: "thinking_delta", delta: reasoning });
    }
    const content = delta.content;
    if (content) {
      this.endThinking();
      if (this.merge) this.text += content;
      else this.emit({ type: "text_delta", delta: content });
    }
    const parts = delta.tool_calls;
    if (parts?.length || choice.finish_reason) this.flushText();
    if (parts) {
      const calls = this.calls;
      for (const part of parts) {
        this.endThinking();
        // a few servers leave out the index; a fragment without an id then continues the latest call
        const index = part.index ?? (part.id || calls.size === 0 ? calls.size : calls.size - 1);
        let call = calls.get(index);
        if (!call) {
          call = { id: part.id || fallbackCallId(), name: "", args: "" };
          calls.set(index, call);
        }
        if (part.function?.name) call.name = part.function.name;
        if (part.function?.arguments) call.args += part.function.arguments;
      }
    }
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.endThinking();
      this.flushCalls();
    }
  }

  /** The body ended: the stream's end event, or why it has none. */
  private end(): Promise<IteratorResult<ModelStreamEvent>> {
    const guard = this.guard as StreamGuard;
    // After a cancel or a stall the read stops at the next chunk (the chunks of one network read need no waiting),
    // so the stream ends short; it must fail as what it is, not as a stream that ended early.
    if (this.request.signal.aborted || guard.timedOut) return this.fail(this.interrupted(), false);
    if (this.finishReason === undefined) return this.fail(streamEndedEarly(this.ctx as ErrorContext), false);
    this.over = true;
    guard.dispose();
    // some servers (vLLM, Ollama) report "stop" on a turn that did call tools
    const stopReason = mapFinishReason(this.finishReason, this.toolCallCount > 0);
    this.emit({ type: "done", stopReason, usage: this.usage, model: this.answeredBy });
    return Promise.resolve(this.take());
  }

  private interrupted(): Error {
    return new Error("stream interrupted");
  }

  private take(): IteratorResult<ModelStreamEvent> {
    const value = this.out[this.head++];
    if (this.head === this.out.length) {
      this.out = [];
      this.head = 0;
    }
    if (value.type !== "done") this.output = true;
    return { value, done: false };
  }

  private emit(event: ModelStreamEvent): void {
    this.out.push(event);
  }

  private flushText(): void {
    if (this.text === "") return;
    this.emit({ type: "text_delta", delta: this.text });
    this.text = "";
  }

  // Thinking streams first; whatever comes after it (text, a tool call, the end) closes the block.
  private endThinking(): void {
    if (this.thinking === "") return;
    this.emit({ type: "thinking_end", thinking: this.thinking });
    this.thinking = "";
  }

  private flushCalls(): void {
    const ordered = [...this.calls.entries()].sort(([a], [b]) => a - b);
    this.calls.clear();
    for (const [, call] of ordered) {
      this.toolCallCount++;
      this.emit(toolCallEvent(call.id, call.name, call.args));
    }
  }

  /** Leaving the body mid-way: the rest is not wanted, and the connection cannot be reused mid-body. */
  private closeBody(): void {
    const batches = this.batches;
    this.batches = undefined;
    if (batches?.return) void Promise.resolve(batches.return()).catch(() => {});
  }

  /** The stream failed: mapped as every provider error is, after the body is closed when it was still open. */
  private fail(err: unknown, closeBody: boolean): Promise<never> {
    this.over = true;
    this.pendingError = undefined;
    this.out = [];
    this.head = 0;
    if (closeBody) this.closeBody();
    const guard = this.guard as StreamGuard;
    let mapped = toProviderError(err, { ...(this.ctx as ErrorContext), timedOut: guard.timedOut });
    guard.dispose();
    if (this.output) mapped = markAfterOutput(mapped);
    return Promise.reject(mapped);
  }
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * The request body, `JSON.stringify` of the Chat Completions params (key order: model, messages, stream,
 * stream_options, tools, max_tokens / max_completion_tokens, reasoning_effort), written from parts so that each
 * tool's JSON is serialised once per process rather than on every call: the tool schemas are most of a body after
 * the system prompt and the same on every call of every run (two calls a turn).
 */
export function requestBody(request: ModelRequest): string {
  let body = `{"model":${JSON.stringify(request.model)},"messages":${JSON.stringify(mapMessages(request.system, request.messages))},"stream":true,"stream_options":{"include_usage":true}`;
  if (request.tools.length > 0) {
    body += ',"tools":[';
    for (let i = 0; i < request.tools.length; i++)
      body += i === 0 ? toolJson(request.tools[i]) : `,${toolJson(request.tools[i])}`;
    body += "]";
  }
  if (request.maxTokens !== undefined) {
    // OpenAI's reasoning models reject max_tokens; compatible servers mostly know only max_tokens
    const field = isOpenAIReasoningModel(request.model) ? "max_completion_tokens" : "max_tokens";
    body += `,"${field}":${JSON.stringify(request.maxTokens)}`;
  }
  const effort = openAIReasoningEffort(request.model, request.thinking);
  if (effort) body += `,"reasoning_effort":${JSON.stringify(effort)}`;
  return `${body}}`;
}

/**
 * A tool's entry in `tools`, by its schema object: the runtime hands the same `parameters` object on every run (the
 * tool's own, as the argument validator's cache in tools/validate.ts also assumes: a schema is not changed in place
 * once registered). The name and description are compared too, since the spec object around them is rebuilt per run.
 */
const toolJsonCache = new WeakMap<object, { name: string; description: string; json: string }>();

function toolJson(tool: ToolSpec): string {
  const cached = toolJsonCache.get(tool.parameters);
  if (cached && cached.name === tool.name && cached.description === tool.description) return cached.json;
  const param: ChatToolParam = {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
  const json = JSON.stringify(param);
  toolJsonCache.set(tool.parameters, { name: tool.name, description: tool.description, json });
  return json;
}

/** A plain text stays a string (what every compatible server takes); parts become `text` / `image_url` parts. */
function userParts(content: MessageContent): string | UserPartParam[] {
  if (typeof content === "string") return content;
  return sendableParts(content).map(
    (part): UserPartParam =>
      part.type === "text"
        ? { type: "text", text: part.text }
        : { type: "image_url", image_url: { url: dataUrl(part) } },
  );
}

function mapMessages(system: string | undefined, messages: ChatMessage[]): ChatMessageParam[] {
  const out: ChatMessageParam[] = [];
  if (system) out.push({ role: "system", content: system });
  // Chat Completions `tool` messages take text only, and nothing may come between an assistant's tool calls and
  // their `tool` messages. So the images of a turn's tool results wait and go in one `user` message right after the
  // last of them, each labelled with the call it came from.
  let toolImages: UserPartParam[] = [];
  const flushToolImages = () => {
    if (toolImages.length > 0) out.push({ role: "user", content: toolImages });
    toolImages = [];
  };
  for (const message of messages) {
    if (message.role !== "toolResult") flushToolImages();
    if (message.role === "user") {
      out.push({ role: "user", content: userParts(message.content) });
    } else if (message.role === "toolResult") {
      const parts = typeof message.content === "string" ? [] : sendableParts(message.content);
      const images = parts.filter((p): p is ImageBlock & { data: string } => p.type === "image");
      let text = typeof message.content === "string" ? message.content : "";
      for (const part of parts) if (part.type === "text") text += text ? `\n${part.text}` : part.text;
      if (images.length > 0) {
        text += `${text ? "\n" : ""}[${images.length} image(s) follow in the next user message]`;
        toolImages.push({ type: "text", text: `Images from tool result ${message.toolCallId} (${message.toolName}):` });
        for (const image of images) toolImages.push({ type: "image_url", image_url: { url: dataUrl(image) } });
      }
      out.push({ role: "tool", tool_call_id: message.toolCallId, content: text });
    } else {
      let text = "";
      const toolCalls: ChatToolCallParam[] = [];
      for (const block of message.content) {
        if (block.type === "text") text += block.text;
        else if (block.type === "toolCall") {
          toolCalls.push({
            id: block.id,
            type: "function",
            function: { name: block.name, arguments: JSON.stringify(block.arguments) },
          });
        }
        // thinking blocks are not sent back: Chat Completions has no field for them
      }
      if (text === "" && toolCalls.length === 0) continue;
      out.push({
        role: "assistant",
        content: text === "" ? null : text,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      });
    }
  }
  flushToolImages();
  return out;
}

function mapFinishReason(reason: string, sawToolCalls: boolean): StopReason {
  if (sawToolCalls) return "tool_calls";
  switch (reason) {
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    case "length":
      return "length";
    case "content_filter":
      return "error";
    default:
      return "stop";
  }
}

function mapUsage(usage: ChunkUsage): Usage {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  // prompt_tokens includes the cached part; keep input as the uncached remainder so input + cacheRead is the prompt
  return usageOf({
    input: Math.max(0, usage.prompt_tokens - cached),
    output: usage.completion_tokens,
    cacheRead: cached,
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
