/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`, streamed). Besides OpenAI itself this is the API that Ollama,
 * vLLM, llama.cpp, LM Studio, DeepSeek and most gateways speak, so it tolerates their variations: no API key,
 * reasoning text in `reasoning_content` or `reasoning`, tool calls without ids, usage in the finish chunk.
 */
import type OpenAI from "openai";
import { type ErrorContext, toProviderError } from "./errors.js";
import { guardStream } from "./stream-guard.js";
import type {
  ChatMessage,
  ModelProvider,
  ModelRequest,
  ModelStreamEvent,
  ProviderInit,
  StopReason,
  Usage,
} from "./types.js";
import { emptyUsage } from "./types.js";
import {
  fallbackCallId,
  isOpenAIReasoningModel,
  openAIReasoningEffort,
  parseToolArguments,
  streamEndedEarly,
  usageOf,
} from "./wire.js";

type ChatParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming;
type ChatMessageParam = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ChatChunk = OpenAI.Chat.Completions.ChatCompletionChunk;

/** Fields OpenAI-compatible servers add to a delta that the SDK types do not know. */
interface ReasoningDelta {
  reasoning_content?: string | null;
  reasoning?: string | null;
}

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

export function createOpenAICompletionsProvider(init: ProviderInit): ModelProvider {
  let client: Promise<OpenAI> | undefined;
  const getClient = (): Promise<OpenAI> => {
    client ??= import("openai").then(
      ({ default: OpenAIClient }) =>
        new OpenAIClient({
          apiKey: init.apiKey ?? "none",
          baseURL: init.baseUrl,
          timeout: init.timeoutMs,
          maxRetries: 0,
          defaultHeaders: init.headers,
        }),
    );
    client.catch(() => {
      client = undefined;
    });
    return client;
  };

  return {
    id: init.id,
    api: "openai-completions",
    stream: (request) => streamChat(init, getClient, request),
  };
}

async function* streamChat(
  init: ProviderInit,
  getClient: () => Promise<OpenAI>,
  request: ModelRequest,
): AsyncGenerator<ModelStreamEvent> {
  const guard = guardStream(request.signal, init.timeoutMs);
  const ctx: ErrorContext = {
    provider: init.id,
    signal: request.signal,
    apiKey: init.apiKey,
    timeoutMs: init.timeoutMs,
  };
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
      yield {
        type: "tool_call",
        id: call.id,
        name: call.name,
        arguments: parseToolArguments(ctx, call.name, call.args),
      };
    }
  }

  try {
    const openai = await getClient();
    const stream = await openai.chat.completions.create(buildParams(request), { signal: guard.signal });
    for await (const chunk of stream as AsyncIterable<ChatChunk>) {
      guard.touch();
      if (chunk.usage) usage = mapUsage(chunk.usage);
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta ?? {};
      const reasoning = (delta as ReasoningDelta).reasoning_content ?? (delta as ReasoningDelta).reasoning;
      if (reasoning) {
        thinking += reasoning;
        yield { type: "thinking_delta", delta: reasoning };
      }
      if (delta.content) {
        yield* endThinking();
        yield { type: "text_delta", delta: delta.content };
      }
      for (const part of delta.tool_calls ?? []) {
        yield* endThinking();
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
        yield* endThinking();
        yield* flushCalls();
      }
    }
    // The SDK ends the iteration quietly when the request is aborted, so an aborted or stalled request looks like a
    // short stream here; it must surface as what it is.
    if (request.signal.aborted || guard.timedOut) throw new Error("stream interrupted");
    if (finishReason === undefined) throw streamEndedEarly(ctx);
    // some servers (vLLM, Ollama) report "stop" on a turn that did call tools
    yield { type: "done", stopReason: mapFinishReason(finishReason, toolCallCount > 0), usage };
  } catch (err) {
    throw toProviderError(err, { ...ctx, timedOut: guard.timedOut });
  } finally {
    guard.dispose();
  }
}

function buildParams(request: ModelRequest): ChatParams {
  const params: ChatParams = {
    model: request.model,
    messages: mapMessages(request.system, request.messages),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    params.tools = request.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  if (request.maxTokens !== undefined) {
    // OpenAI's reasoning models reject max_tokens; compatible servers mostly know only max_tokens
    if (isOpenAIReasoningModel(request.model)) params.max_completion_tokens = request.maxTokens;
    else params.max_tokens = request.maxTokens;
  }
  const effort = openAIReasoningEffort(request.model, request.thinking);
  if (effort) params.reasoning_effort = effort;
  return params;
}

function mapMessages(system: string | undefined, messages: ChatMessage[]): ChatMessageParam[] {
  const out: ChatMessageParam[] = [];
  if (system) out.push({ role: "system", content: system });
  for (const message of messages) {
    if (message.role === "user") {
      out.push({ role: "user", content: message.content });
    } else if (message.role === "toolResult") {
      out.push({ role: "tool", tool_call_id: message.toolCallId, content: message.content });
    } else {
      let text = "";
      const toolCalls: OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[] = [];
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

function mapUsage(usage: OpenAI.Completions.CompletionUsage): Usage {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  // prompt_tokens includes the cached part; keep input as the uncached remainder so input + cacheRead is the prompt
  return usageOf({
    input: Math.max(0, usage.prompt_tokens - cached),
    output: usage.completion_tokens,
    cacheRead: cached,
  });
}
