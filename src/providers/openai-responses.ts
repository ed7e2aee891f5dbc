/**
 * OpenAI Responses (`POST /v1/responses`, streamed, `store: false` so no conversation state lives at OpenAI: the
 * whole transcript is sent every turn, as with the other APIs).
 */
import type OpenAI from "openai";
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
  Usage,
} from "./types.js";
import { emptyUsage } from "./types.js";
import {
  dataUrl,
  fallbackCallId,
  flagOutput,
  lazyClientPerKey,
  openAIReasoningEffort,
  sendableParts,
  streamEndedEarly,
  toolCallEvent,
  usageOf,
} from "./wire.js";

type ResponseParams = OpenAI.Responses.ResponseCreateParamsStreaming;
type InputItem = OpenAI.Responses.ResponseInputItem;
type StreamEvent = OpenAI.Responses.ResponseStreamEvent;

interface PendingCall {
  callId: string;
  name: string;
  args: string;
}

export function createOpenAIResponsesProvider(init: ProviderInit): ModelProvider {
  const getClient = lazyClientPerKey((apiKey) =>
    import("openai").then(
      ({ default: OpenAIClient }) =>
        new OpenAIClient({
          apiKey: apiKey ?? init.apiKey ?? "none",
          baseURL: init.baseUrl,
          timeout: init.timeoutMs,
          maxRetries: 0,
          defaultHeaders: init.headers,
        }),
    ),
  );

  return {
    id: init.id,
    api: "openai-responses",
    stream: (request) => flagOutput(streamResponses(init, getClient, request)),
  };
}

async function* streamResponses(
  init: ProviderInit,
  getClient: (apiKey?: string) => Promise<OpenAI>,
  request: ModelRequest,
): AsyncGenerator<ModelStreamEvent> {
  const guard = guardStream(request.signal, init.timeoutMs);
  const ctx = requestErrorContext(init, request);
  // keyed by output_index, which every item event carries (item ids are optional on some compatible servers)
  const calls = new Map<number, PendingCall>();
  const reasoning = new Map<number, string>();
  let toolCallCount = 0;
  let stopReason: StopReason | undefined;
  let usage: Usage = emptyUsage();
  let answeredBy: string | undefined;

  const finishCall = (index: number, final?: { call_id?: string; name?: string; arguments?: string }) => {
    const call = calls.get(index);
    if (!call) return undefined;
    calls.delete(index);
    toolCallCount++;
    const name = final?.name || call.name;
    const args = final?.arguments ?? call.args;
    return toolCallEvent(final?.call_id || call.callId, name, args);
  };

  function* finishThinking(index: number): Generator<ModelStreamEvent> {
    const thinking = reasoning.get(index);
    if (thinking === undefined) return;
    reasoning.delete(index);
    yield { type: "thinking_end", thinking };
  }

  function* flushAll(): Generator<ModelStreamEvent> {
    for (const index of [...reasoning.keys()]) yield* finishThinking(index);
    for (const index of [...calls.keys()].sort((a, b) => a - b)) {
      const event = finishCall(index);
      if (event) yield event;
    }
  }

  try {
    const openai = await getClient(request.apiKey);
    const stream = await openai.responses.create(buildParams(request), { signal: guard.signal });
    for await (const event of stream as AsyncIterable<StreamEvent>) {
      guard.touch();
      switch (event.type) {
        case "response.output_text.delta":
          yield { type: "text_delta", delta: event.delta };
          break;
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta":
          reasoning.set(event.output_index, (reasoning.get(event.output_index) ?? "") + event.delta);
          yield { type: "thinking_delta", delta: event.delta };
          break;
        case "response.output_item.added":
          if (event.item.type === "function_call") {
            calls.set(event.output_index, {
              callId: event.item.call_id || fallbackCallId(),
              name: event.item.name,
              args: event.item.arguments ?? "",
            });
          }
          break;
        case "response.function_call_arguments.delta": {
          const call = calls.get(event.output_index);
          if (call) call.args += event.delta;
          break;
        }
        case "response.function_call_arguments.done": {
          const call = calls.get(event.output_index);
          if (call) {
            call.args = event.arguments;
            // Older servers repeat the name here; the SDK's type dropped the field, the wire may still carry it.
            const name = (event as { name?: unknown }).name;
            if (typeof name === "string" && name) call.name = name;
          }
          break;
        }
        case "response.output_item.done":
          if (event.item.type === "function_call") {
            const done = finishCall(event.output_index, event.item);
            if (done) yield done;
          } else if (event.item.type === "reasoning") {
            yield* finishThinking(event.output_index);
          }
          break;
        case "response.completed":
        case "response.incomplete": {
          yield* flushAll();
          if (event.response.usage) usage = mapUsage(event.response.usage);
          answeredBy = event.response.model || undefined;
          stopReason = mapStatus(event, toolCallCount > 0);
          break;
        }
        case "response.failed": {
          const error = event.response.error;
          throw apiError(ctx, { message: error?.message ?? "the response failed", code: error?.code ?? undefined });
        }
        case "error":
          throw apiError(ctx, { message: event.message, code: event.code ?? undefined });
      }
    }
    // The SDK ends the iteration quietly when the request is aborted, so an aborted or stalled request looks like a
    // short stream here; it must surface as what it is.
    if (request.signal.aborted || guard.timedOut) throw new Error("stream interrupted");
    if (stopReason === undefined) throw streamEndedEarly(ctx);
    yield { type: "done", stopReason, usage, model: answeredBy };
  } catch (err) {
    throw toProviderError(err, { ...ctx, timedOut: guard.timedOut });
  } finally {
    guard.dispose();
  }
}

function buildParams(request: ModelRequest): ResponseParams {
  const params: ResponseParams = {
    model: request.model,
    input: mapInput(request.messages),
    stream: true,
    store: false,
  };
  if (request.system) params.instructions = request.system;
  if (request.tools.length > 0) {
    params.tools = request.tools.map((tool) => ({
      type: "function",
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      // strict mode demands every property be required and additionalProperties false, which our schemas are not
      strict: false,
    }));
  }
  if (request.maxTokens !== undefined) params.max_output_tokens = request.maxTokens;
  const effort = openAIReasoningEffort(request.model, request.thinking);
  if (effort) params.reasoning = { effort, summary: "auto" };
  return params;
}

type InputPart = OpenAI.Responses.ResponseInputText | OpenAI.Responses.ResponseInputImage;

/** Parts as Responses input items: `input_text`, and `input_image` with a data URL (no file upload round trip). */
function inputParts(content: MessageContent): InputPart[] {
  if (typeof content === "string") return [{ type: "input_text", text: content }];
  return sendableParts(content).map(
    (part): InputPart =>
      part.type === "text"
        ? { type: "input_text", text: part.text }
        : { type: "input_image", image_url: dataUrl(part), detail: "auto" },
  );
}

function mapInput(messages: ChatMessage[]): InputItem[] {
  const out: InputItem[] = [];
  for (const message of messages) {
    if (message.role === "user") {
      out.push({
        role: "user",
        content: typeof message.content === "string" ? message.content : inputParts(message.content),
      });
    } else if (message.role === "toolResult") {
      const output = typeof message.content === "string" ? message.content : inputParts(message.content);
      out.push({ type: "function_call_output", call_id: message.toolCallId, output });
    } else {
      let text = "";
      const flushText = () => {
        if (text !== "") out.push({ role: "assistant", content: text });
        text = "";
      };
      for (const block of message.content) {
        if (block.type === "text") text += block.text;
        else if (block.type === "toolCall") {
          flushText();
          out.push({
            type: "function_call",
            call_id: block.id,
            name: block.name,
            arguments: JSON.stringify(block.arguments),
          });
        }
        // thinking blocks stay out: with store:false a reasoning item cannot be referenced again without its
        // encrypted content, which ThinkingBlock does not carry
      }
      flushText();
    }
  }
  return out;
}

function mapStatus(
  event: OpenAI.Responses.ResponseCompletedEvent | OpenAI.Responses.ResponseIncompleteEvent,
  sawToolCalls: boolean,
): StopReason {
  if (event.type === "response.incomplete") {
    const reason = event.response.incomplete_details?.reason;
    return reason === "content_filter" ? "error" : "length";
  }
  return sawToolCalls ? "tool_calls" : "stop";
}

function mapUsage(usage: OpenAI.Responses.ResponseUsage): Usage {
  const cached = usage.input_tokens_details?.cached_tokens ?? 0;
  return usageOf({ input: Math.max(0, usage.input_tokens - cached), output: usage.output_tokens, cacheRead: cached });
}
