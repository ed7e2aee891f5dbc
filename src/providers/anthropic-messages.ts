/**
 * Anthropic Messages (`POST /v1/messages`, streamed). Thinking blocks are kept with their signatures because the API
 * refuses a tool-use continuation whose thinking block was altered or dropped.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { apiError, requestErrorContext, toProviderError } from "./errors.js";
import { guardStream } from "./stream-guard.js";
import type {
  ChatMessage,
  MessageContent,
  ModelProvider,
  ModelRequest,
  ModelStreamEvent,
  ProviderInit,
  StopReason,
  ThinkingLevel,
  Usage,
} from "./types.js";
import { flagOutput, lazyClientPerKey, sendableParts, streamEndedEarly, toolCallEvent, usageOf } from "./wire.js";

type MessageParams = Anthropic.Messages.MessageCreateParamsStreaming;
type MessageParam = Anthropic.Messages.MessageParam;
type StreamEvent = Anthropic.Messages.RawMessageStreamEvent;
type ContentBlockParam = Anthropic.Messages.ContentBlockParam;
type ToolResultBlockParam = Anthropic.Messages.ToolResultBlockParam;
type ImageMediaType = Anthropic.Messages.Base64ImageSource["media_type"];

const DEFAULT_MAX_TOKENS = 4096;

const THINKING_BUDGET: Record<Exclude<ThinkingLevel, "off">, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
  // the Messages API has no "the model decides" switch on every model: the middle budget, which the model may
  // use up or not, is the closest to OpenClaw's adaptive
  adaptive: 8192,
};

type OpenBlock =
  | { type: "text" }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "tool_use"; id: string; name: string; json: string; input: unknown }
  | { type: "other" };

export function createAnthropicMessagesProvider(init: ProviderInit): ModelProvider {
  const getClient = lazyClientPerKey((apiKey, mode) =>
    import("@anthropic-ai/sdk").then(
      ({ default: AnthropicClient }) =>
        new AnthropicClient({
          // an explicit key keeps the SDK from hunting for credentials in the environment and profile files; a
          // token (an auth profile's mode "token") goes as `Authorization: Bearer` and no x-api-key at all
          ...(mode === "token" ? { apiKey: null, authToken: apiKey } : { apiKey: apiKey ?? init.apiKey ?? "none" }),
          baseURL: sdkBaseUrl(init.baseUrl),
          timeout: init.timeoutMs,
          maxRetries: 0,
          defaultHeaders: init.headers,
        }),
    ),
  );

  return {
    id: init.id,
    api: "anthropic-messages",
    stream: (request) => flagOutput(streamMessages(init, getClient, request)),
  };
}

/**
 * The SDK appends `/v1/messages` itself, while OpenAI-style configs (and the fake model server) give base URLs that
 * end in `/v1`; accept both rather than posting to `/v1/v1/messages`.
 */
function sdkBaseUrl(baseUrl: string | undefined): string | undefined {
  if (!baseUrl) return undefined;
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}

async function* streamMessages(
  init: ProviderInit,
  getClient: (apiKey?: string, mode?: ModelRequest["apiKeyMode"]) => Promise<Anthropic>,
  request: ModelRequest,
): AsyncGenerator<ModelStreamEvent> {
  const guard = guardStream(request.signal, init.timeoutMs);
  const ctx = requestErrorContext(init, request);
  const blocks = new Map<number, OpenBlock>();
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let stopReason: StopReason | undefined;
  let toolCallCount = 0;
  let answeredBy: string | undefined;

  try {
    const anthropic = await getClient(request.apiKey, request.apiKeyMode);
    const stream = await anthropic.messages.create(buildParams(init, request), { signal: guard.signal });
    for await (const event of stream as AsyncIterable<StreamEvent | { type: "error"; error?: unknown }>) {
      guard.touch();
      switch (event.type) {
        case "message_start": {
          const u = event.message.usage;
          answeredBy = event.message.model || undefined;
          usage.input = u.input_tokens ?? 0;
          usage.output = u.output_tokens ?? 0;
          usage.cacheRead = u.cache_read_input_tokens ?? 0;
          usage.cacheWrite = u.cache_creation_input_tokens ?? 0;
          break;
        }
        case "content_block_start": {
          const block = event.content_block;
          if (block.type === "text") {
            blocks.set(event.index, { type: "text" });
            if (block.text) yield { type: "text_delta", delta: block.text };
          } else if (block.type === "thinking") {
            blocks.set(event.index, {
              type: "thinking",
              thinking: block.thinking ?? "",
              signature: block.signature ?? "",
            });
            if (block.thinking) yield { type: "thinking_delta", delta: block.thinking };
          } else if (block.type === "tool_use") {
            blocks.set(event.index, { type: "tool_use", id: block.id, name: block.name, json: "", input: block.input });
          } else {
            // redacted_thinking and server-tool blocks: ThinkingBlock has no place for redacted data, see the report
            blocks.set(event.index, { type: "other" });
          }
          break;
        }
        case "content_block_delta": {
          const block = blocks.get(event.index);
          const delta = event.delta;
          if (delta.type === "text_delta") {
            yield { type: "text_delta", delta: delta.text };
          } else if (delta.type === "thinking_delta" && block?.type === "thinking") {
            block.thinking += delta.thinking;
            yield { type: "thinking_delta", delta: delta.thinking };
          } else if (delta.type === "signature_delta" && block?.type === "thinking") {
            block.signature += delta.signature;
          } else if (delta.type === "input_json_delta" && block?.type === "tool_use") {
            block.json += delta.partial_json;
          }
          break;
        }
        case "content_block_stop": {
          const block = blocks.get(event.index);
          blocks.delete(event.index);
          if (block?.type === "thinking") {
            yield {
              type: "thinking_end",
              thinking: block.thinking,
              ...(block.signature ? { signature: block.signature } : {}),
            };
          } else if (block?.type === "tool_use") {
            toolCallCount++;
            yield toolCall(block);
          }
          break;
        }
        case "message_delta": {
          const u = event.usage;
          if (u.output_tokens != null) usage.output = u.output_tokens;
          if (u.input_tokens != null) usage.input = u.input_tokens;
          if (u.cache_read_input_tokens != null) usage.cacheRead = u.cache_read_input_tokens;
          if (u.cache_creation_input_tokens != null) usage.cacheWrite = u.cache_creation_input_tokens;
          if (event.delta.stop_reason) stopReason = mapStopReason(event.delta.stop_reason);
          break;
        }
        case "message_stop":
          stopReason ??= toolCallCount > 0 ? "tool_calls" : "stop";
          break;
        case "error": {
          // the SDK throws on `event: error` itself; this covers proxies that send it as a plain data event
          const body = (event.error ?? {}) as { type?: string; message?: string };
          throw apiError(ctx, { type: body.type, message: body.message });
        }
      }
    }
    // The SDK ends the iteration quietly when the request is aborted, so an aborted or stalled request looks like a
    // short stream here; it must surface as what it is.
    if (request.signal.aborted || guard.timedOut) throw new Error("stream interrupted");
    if (stopReason === undefined) throw streamEndedEarly(ctx);
    const result: Usage = usageOf(usage);
    yield { type: "done", stopReason, usage: result, model: answeredBy };
  } catch (err) {
    throw toProviderError(err, { ...ctx, timedOut: guard.timedOut });
  } finally {
    guard.dispose();
  }
}

function toolCall(block: { id: string; name: string; json: string; input: unknown }): ModelStreamEvent {
  if (block.json !== "") return toolCallEvent(block.id, block.name, block.json);
  // a call without arguments streams no input_json_delta; the start event's input is then the whole input
  const input = block.input;
  const args = typeof input === "object" && input !== null && !Array.isArray(input) ? input : {};
  return { type: "tool_call", id: block.id, name: block.name, arguments: args as Record<string, unknown> };
}

function buildParams(init: ProviderInit, request: ModelRequest): MessageParams {
  const configured = init.models.find((model) => model.id === request.model)?.maxTokens;
  let maxTokens = request.maxTokens ?? configured ?? DEFAULT_MAX_TOKENS;
  const params: MessageParams = {
    model: request.model,
    messages: mapMessages(request.messages),
    max_tokens: maxTokens,
    stream: true,
  };
  if (request.system) params.system = request.system;
  if (request.tools.length > 0) {
    params.tools = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.parameters as Anthropic.Messages.Tool.InputSchema,
    }));
  }
  if (request.thinking && request.thinking !== "off") {
    const budget = THINKING_BUDGET[request.thinking];
    // the API requires max_tokens > budget_tokens; the budget comes on top of the answer's own allowance
    if (maxTokens <= budget) maxTokens += budget;
    params.max_tokens = maxTokens;
    params.thinking = { type: "enabled", budget_tokens: budget };
  }
  return params;
}

function mapMessages(messages: ChatMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  let toolResults: ToolResultBlockParam[] | undefined;
  for (const message of messages) {
    if (message.role === "toolResult") {
      // all results of one assistant turn go back in a single user message, as the API expects
      if (!toolResults) {
        toolResults = [];
        out.push({ role: "user", content: toolResults });
      }
      toolResults.push({
        type: "tool_result",
        tool_use_id: message.toolCallId,
        content: userContent(message.content),
        ...(message.isError ? { is_error: true } : {}),
      });
      continue;
    }
    toolResults = undefined;
    if (message.role === "user") {
      out.push({ role: "user", content: userContent(message.content) });
      continue;
    }
    const content: ContentBlockParam[] = [];
    for (const block of message.content) {
      if (block.type === "text") {
        // the API rejects empty text blocks
        if (block.text !== "") content.push({ type: "text", text: block.text });
      } else if (block.type === "thinking") {
        // an unsigned block (from another provider, or a cut stream) would be rejected; the signature is the proof
        if (block.signature) content.push({ type: "thinking", thinking: block.thinking, signature: block.signature });
      } else {
        content.push({ type: "tool_use", id: block.id, name: block.name, input: block.arguments });
      }
    }
    if (content.length > 0) out.push({ role: "assistant", content });
  }
  return out;
}

/** Text stays a string; parts become text and base64 image blocks (the same shape inside `tool_result`). */
function userContent(
  content: MessageContent,
): string | Array<Anthropic.Messages.TextBlockParam | Anthropic.Messages.ImageBlockParam> {
  if (typeof content === "string") return content;
  return sendableParts(content).map((part) =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : {
          type: "image",
          // image-prepare.ts only makes png, jpeg, gif and webp: the four types the API takes
          source: { type: "base64", media_type: part.mimeType as ImageMediaType, data: part.data },
        },
  );
}

function mapStopReason(reason: string): StopReason {
  switch (reason) {
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "refusal":
      return "error";
    default:
      return "stop";
  }
}
