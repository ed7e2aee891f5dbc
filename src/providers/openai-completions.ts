/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`, streamed). Besides OpenAI itself this is the API that Ollama,
 * vLLM, llama.cpp, LM Studio, DeepSeek and most gateways speak, so it tolerates their variations: no API key,
 * reasoning text in `reasoning_content` or `reasoning`, tool calls without ids, usage in the finish chunk.
 *
 * It talks to the API with Node's own `http` (http-stream.ts) and a small SSE reader (sse.ts) rather than the `openai`
 * SDK or fetch: this is the hot path of every agent turn and of every streamed token, and both the SDK's per-request
 * machinery and fetch's per-read web-stream machinery cost more than the work itself.
 */
import { providerError, requestErrorContext, toProviderError } from "./errors.js";
import { postStreamed, type StreamedResponse } from "./http-stream.js";
import type { HeaderSource } from "./retry-after.js";
import { guardStream } from "./stream-guard.js";
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
  flagOutput,
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
      flagOutput(streamChat(init, url, request.apiKey ? requestHeaders(init, request.apiKey) : headers, request)),
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

async function* streamChat(
  init: ProviderInit,
  url: string,
  headers: Record<string, string>,
  request: ModelRequest,
): AsyncGenerator<ModelStreamEvent> {
  // the guard's signal covers the whole exchange: connect, response headers, and every wait for the next chunk
  const guard = guardStream(request.signal, init.timeoutMs);
  const ctx = requestErrorContext(init, request);
  const calls = new Map<number, PendingCall>();
  let thinking = "";
  let finishReason: string | undefined;
  let toolCallCount = 0;
  let usage: Usage = emptyUsage();

  // Thinking streams first; whatever comes after it (text, a tool call, the end) closes the block.
  function* endThinking(): Generator<ModelStreamEvent> {
    if (thinking === "") return;
    yield { type: "thinking_end", thinking };
    thinking = "";
  }

  function* flushCalls(): Generator<ModelStreamEvent> {
    const ordered = [...calls.entries()].sort(([a], [b]) => a - b);
    calls.clear();
    for (const [, call] of ordered) {
      toolCallCount++;
      yield toolCallEvent(call.id, call.name, call.args);
    }
  }

  try {
    const response = await postStreamed(url, headers, requestBody(request), guard.signal);
    if (response.status < 200 || response.status > 299) throw await httpError(response);

    let sawDone = false;
    let answeredBy: string | undefined;
    // On the stream beat, consecutive text of one batch goes on as one delta: a batch is then everything that came
    // since the loop last took some, and past this point every delta costs a pass through the loop, the run and its
    // events. Without a beat (coalescing off) every chunk stays a delta of its own.
    const merge = request.streamBeat !== undefined;
    let text = "";
    read: for await (const batch of response.sseBatches(request.streamBeat)) {
      guard.touch();
      for (const event of batch) {
        // a consumer that was slow to take the last event may come back after a cancel or a stall
        if (guard.signal.aborted) break read;
        // the rest of the body after [DONE] is still read (and ignored) so the connection can be reused
        if (sawDone) continue;
        if (event.data.startsWith("[DONE]")) {
          sawDone = true;
          continue;
        }
        const chunk: unknown = JSON.parse(event.data);
        if (!isRecord(chunk)) {
          throw providerError(ctx, "bad_response", `a stream chunk that is not a JSON object: ${clip(event.data)}`);
        }
        const { error, usage: chunkUsage, choices, model } = chunk as ChatChunk;
        if (typeof model === "string" && model) answeredBy = model;
        if (error) {
          // what streamed before the error was seen by the user as it came: it is delivered before the failure
          if (text !== "") yield { type: "text_delta", delta: text };
          text = "";
          throw new ChatCompletionsApiError(undefined, error, undefined);
        }
        if (chunkUsage) usage = mapUsage(chunkUsage);
        const choice = choices?.[0];
        if (!choice) continue;
        const delta = choice.delta ?? {};
        const reasoning = delta.reasoning_content ?? delta.reasoning;
        if (reasoning) {
          if (text !== "") yield { type: "text_delta", delta: text };
          text = "";
          thinking += reasoning;
          yield { type: "thinking_delta", delta: reasoning };
        }
        if (delta.content) {
          if (thinking !== "") yield* endThinking();
          if (merge) text += delta.content;
          else yield { type: "text_delta", delta: delta.content };
        }
        if (delta.tool_calls?.length || choice.finish_reason) {
          if (text !== "") yield { type: "text_delta", delta: text };
          text = "";
        }
        for (const part of delta.tool_calls ?? []) {
          if (thinking !== "") yield* endThinking();
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
        if (choice.finish_reason) {
          finishReason = choice.finish_reason;
          if (thinking !== "") yield* endThinking();
          yield* flushCalls();
        }
      }
      if (text !== "") yield { type: "text_delta", delta: text };
      text = "";
    }
    // After a cancel or a stall the loop stops at the next event (the events of one network read need no waiting), so
    // the stream ends short; it must fail as what it is, not as a stream that ended early.
    if (request.signal.aborted || guard.timedOut) throw new Error("stream interrupted");
    if (finishReason === undefined) throw streamEndedEarly(ctx);
    // some servers (vLLM, Ollama) report "stop" on a turn that did call tools
    yield { type: "done", stopReason: mapFinishReason(finishReason, toolCallCount > 0), usage, model: answeredBy };
  } catch (err) {
    throw toProviderError(err, { ...ctx, timedOut: guard.timedOut });
  } finally {
    guard.dispose();
  }
}

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
