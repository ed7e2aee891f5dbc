/**
 * The provider port: the only way the agent loop talks to a model. One implementation per wire API
 * (openai-completions, openai-responses, anthropic-messages, scripted). Providers translate our neutral
 * message shapes into their wire format and translate the streamed answer back into ModelStreamEvents.
 */
import type { Beat } from "../infra/cadence.js";

// A run's usage goes on the wire as is, so its shape is declared once, with the other wire types.
import type { Usage } from "../protocol/run.js";

export type { Usage };

export type ApiKind = "openai-completions" | "openai-responses" | "anthropic-messages" | "scripted";

import type { ThinkingLevel } from "../protocol/enums.js";

export type { ThinkingLevel };

export function emptyUsage(): Usage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    total: a.total + b.total,
  };
}

export interface TextBlock {
  type: "text";
  text: string;
}
export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
  /** Provider-specific opaque data needed to send the block back (Anthropic signature). */
  signature?: string;
}
export interface ToolCallBlock {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}
export type AssistantBlock = TextBlock | ThinkingBlock | ToolCallBlock;

/**
 * An image inside a user message or a tool result. In memory and on the way to the model it carries `data`
 * (base64, already downscaled by tools/image-prepare.ts). In the transcript the bytes live in a blob row and the
 * JSON keeps only `blob` (their sha256) and the metadata; clients reading history get that form, the model's
 * history is re-hydrated (storage/sqlite-store.ts).
 */
export interface ImageBlock {
  type: "image";
  mimeType: string;
  /** base64 of the image bytes; absent when only the reference was loaded */
  data?: string;
  /** sha256 (hex) of the decoded bytes: the key of the stored blob */
  blob?: string;
  /** decoded size in bytes */
  bytes?: number;
  width?: number;
  height?: number;
}

/** What a user message or a tool result holds: plain text, or text and image parts. */
export type MessagePart = TextBlock | ImageBlock;
export type MessageContent = string | MessagePart[];

/** The text of a message's content, image parts left out. */
export function contentText(content: MessageContent): string {
  if (typeof content === "string") return content;
  let text = "";
  for (const part of content) {
    if (part.type === "text") text += text ? `\n${part.text}` : part.text;
  }
  return text;
}

/** The content as one text for a reader of text (a summarizer, a terminal): each image becomes a short note. */
export function contentWithImageNotes(content: MessageContent): string {
  if (typeof content === "string") return content;
  return content
    .map((part) =>
      part.type === "text"
        ? part.text
        : `[image ${part.mimeType}${part.width && part.height ? ` ${part.width}×${part.height}` : ""}]`,
    )
    .join("\n");
}

/** The image parts of a message's content. */
export function contentImages(content: MessageContent): ImageBlock[] {
  return typeof content === "string" ? [] : content.filter((p): p is ImageBlock => p.type === "image");
}

/** Decoded size of an image part: the recorded one, or what its base64 decodes to. */
export function imageBytes(image: ImageBlock): number {
  if (image.bytes !== undefined) return image.bytes;
  return image.data ? Buffer.byteLength(image.data, "base64") : 0;
}

/** Applies `fn` to each text part (or the whole string), leaving image parts as they are. */
export function mapContentText(content: MessageContent, fn: (text: string) => string): MessageContent {
  if (typeof content === "string") return fn(content);
  return content.map((part) => (part.type === "text" ? { ...part, text: fn(part.text) } : part));
}

export interface UserMessage {
  role: "user";
  content: MessageContent;
}
export interface AssistantMessage {
  role: "assistant";
  content: AssistantBlock[];
  stopReason?: StopReason;
  usage?: Usage;
  /** provider/model that produced it */
  model?: string;
  /**
   * Why the run this message ended failed (pi-ai's field name, which OpenClaw's transcripts use): set on the last
   * assistant row of a run that ended in error, timeout or abort, so the failure stays in the transcript.
   */
  errorMessage?: string;
  /** the failure's kind (errors.ts taxonomy, or "timeout" / "aborted"), beside errorMessage */
  errorKind?: string;
}

/**
 * Whether a stored message goes to the model: a failure marker (an assistant row with no content, only the run's
 * error) is a record for people reading the transcript, not a turn of the conversation.
 */
export function isContextMessage(message: ChatMessage): boolean {
  return !(message.role === "assistant" && message.content.length === 0 && message.errorMessage !== undefined);
}
export interface ToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: MessageContent;
  isError: boolean;
}
export type ChatMessage = UserMessage | AssistantMessage | ToolResultMessage;

/** JSON Schema for a tool's parameters (always an object schema). */
export type JsonSchema = Record<string, unknown>;

export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export type StopReason = "stop" | "tool_calls" | "length" | "error" | "aborted";

export interface ModelRequest {
  /** model id as the provider knows it (no "provider/" prefix) */
  model: string;
  system?: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  maxTokens?: number;
  thinking?: ThinkingLevel;
  signal: AbortSignal;
  /**
   * The run's stream beat (infra/cadence.ts). A provider that reads the network itself hands a busy stream's events
   * on at most once per beat, merged, instead of once per network read: downstream of the socket, a token then costs
   * a share of one pass through the loop instead of a pass of its own. Absent: every chunk as it comes.
   */
  streamBeat?: Beat;
  /**
   * The key for this call: the auth profile the run chose (credentials/, pi's per-call getApiKey), so the key can
   * change between calls of one provider instance. Absent: the provider's configured `apiKey`. Scripted ignores it.
   */
  apiKey?: string;
  /**
   * How `apiKey` is sent: "api_key" (the default) the API's key header; "token" a bearer token (an auth profile's
   * `mode`: Anthropic then gets `Authorization: Bearer` instead of `x-api-key`; OpenAI's APIs take both the same way).
   */
  apiKeyMode?: "api_key" | "token";
}

export type ModelStreamEvent =
  | { type: "text_delta"; delta: string }
  | { type: "thinking_delta"; delta: string }
  /** A thinking block is complete (signature when the API gives one). */
  | { type: "thinking_end"; thinking: string; signature?: string }
  /** Emitted once per tool call, when its arguments are complete and parsed. */
  | {
      type: "tool_call";
      id: string;
      name: string;
      arguments: Record<string, unknown>;
      /** set when the arguments could not be parsed (e.g. cut off by the output limit): the call must not run */
      invalid?: string;
    }
  /** The answer is complete; `model` is the model the API says answered, when it says (tracing records it). */
  | { type: "done"; stopReason: StopReason; usage: Usage; model?: string };

export interface ModelProvider {
  /** provider id from config, e.g. "openai", "local" */
  readonly id: string;
  readonly api: ApiKind;
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}

export type ProviderErrorKind =
  | "rate_limit"
  | "server"
  | "context_length"
  | "auth"
  /** out of credit or quota (HTTP 402, OpenAI `insufficient_quota`, Anthropic's credit balance): waiting will not help */
  | "billing"
  /** the endpoint does not know the model (HTTP 404, `model_not_found`): another model may, retrying will not */
  | "model_not_found"
  | "bad_request"
  | "timeout"
  | "aborted"
  | "network"
  | "bad_response";

export interface ProviderErrorOptions {
  status?: number;
  cause?: unknown;
  /** what the server's `retry-after-ms` / `Retry-After` header asked for, in ms */
  retryAfterMs?: number;
  /**
   * How long the provider says the limit that was hit lasts, in ms: `retry-after-ms` / `Retry-After`, else its
   * rate-limit reset headers (OpenAI `x-ratelimit-reset-*`, Anthropic `anthropic-ratelimit-*-reset`). An auth
   * profile cools down this long (credentials/cooldown.ts); the retry wait reads only `retryAfterMs`.
   */
  resetAfterMs?: number;
  /** the request failed after the model had already streamed something (text, thinking or a tool call) */
  afterOutput?: boolean;
}

/** Every provider failure is normalized to this, so the loop and reply shaping never see SDK classes. */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly resetAfterMs?: number;
  readonly afterOutput: boolean;
  /**
   * Worth sending the same request to the same model again (SPEC 16): rate limits, server errors and overload, and a
   * connection that failed before any output. A connection cut in the middle of an answer is not: it tends to repeat
   * for the same prompt (a proxy's stream limit, a server crashing on this input), so the run moves to a fallback.
   */
  readonly retryable: boolean;
  constructor(kind: ProviderErrorKind, message: string, opts: ProviderErrorOptions = {}) {
    super(message, { cause: opts.cause });
    this.name = "ProviderError";
    this.kind = kind;
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
    this.resetAfterMs = opts.resetAfterMs;
    this.afterOutput = opts.afterOutput === true;
    this.retryable = kind === "rate_limit" || kind === "server" || (kind === "network" && !this.afterOutput);
  }
}

export interface ProviderModelConfig {
  id: string;
  contextWindow?: number;
  maxTokens?: number;
  /** false: never send thinking/reasoning parameters to this model */
  reasoning?: boolean;
  /** display name (config `name`) */
  name?: string;
  /** USD per million tokens, for the run's estimated cost */
  cost?: ModelCost;
  /** what the model reads (OpenClaw's capability key); without "image" it gets no image (providers/image-input.ts) */
  input?: Array<"text" | "image">;
}

export interface ModelCost {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** The estimated cost in USD of `usage` at `cost` (per million tokens); input excludes cache reads and writes. */
export function estimateCostUsd(usage: Usage, cost: ModelCost): number {
  const perToken =
    usage.input * cost.input +
    usage.output * cost.output +
    usage.cacheRead * cost.cacheRead +
    usage.cacheWrite * cost.cacheWrite;
  return Math.round((perToken / 1_000_000) * 1e6) / 1e6;
}

/** What a provider module needs to be constructed (from config.models.providers.<id>). */
export interface ProviderInit {
  id: string;
  api: ApiKind;
  baseUrl?: string;
  apiKey?: string;
  /** covers connect, headers and body of one HTTP request */
  timeoutMs?: number;
  headers?: Record<string, string>;
  models: ProviderModelConfig[];
  /** scripted provider: path of the JSON5 script, or the parsed script itself */
  script?: string | unknown;
}
