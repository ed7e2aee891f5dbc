/** Small pieces every wire-API provider needs in the same way. */
import { randomUUID } from "node:crypto";
import { type ErrorContext, markAfterOutput, providerError } from "./errors.js";
import {
  type ImageBlock,
  type MessagePart,
  type ModelStreamEvent,
  ProviderError,
  type ThinkingLevel,
  type Usage,
} from "./types.js";

/**
 * Tool-call arguments arrive as JSON text. Broken JSON (most often a call cut off by the output-token limit) must
 * not become a call with empty arguments (the tool would run with nothing), nor fail the whole run: the call is
 * marked invalid, the loop answers it with an error result naming the problem, and the model issues it again.
 */
export function toolCallEvent(id: string, name: string, raw: string): ModelStreamEvent {
  if (raw.trim() === "") return { type: "tool_call", id, name, arguments: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return invalidCall(id, name, `its arguments are not valid JSON (cut off?): ${clip(raw)}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return invalidCall(id, name, `its arguments are not a JSON object: ${clip(raw)}`);
  }
  return { type: "tool_call", id, name, arguments: parsed as Record<string, unknown> };
}

function invalidCall(id: string, name: string, problem: string): ModelStreamEvent {
  return { type: "tool_call", id, name, arguments: {}, invalid: `tool call "${name}" was not run: ${problem}` };
}

export function streamEndedEarly(ctx: ErrorContext): ProviderError {
  return providerError(ctx, "network", "the stream ended before the model finished (no end-of-answer event arrived)");
}

/** Some OpenAI-compatible servers omit tool call ids; the loop needs one to pair each result with its call. */
export function fallbackCallId(): string {
  return `call_${randomUUID().replace(/-/g, "").slice(0, 24)}`;
}

/** OpenAI only accepts `reasoning_effort` / `reasoning` on its reasoning families; other models reject the field. */
export function isOpenAIReasoningModel(model: string): boolean {
  const bare = model.slice(model.lastIndexOf("/") + 1).toLowerCase();
  return /^(o1|o3|o4|gpt-5)(\b|[-_.])/.test(bare);
}

export function openAIReasoningEffort(
  model: string,
  level: ThinkingLevel | undefined,
): "minimal" | "low" | "medium" | "high" | undefined {
  // adaptive: no effort sent, so the model uses its own default
  if (!level || level === "off" || level === "adaptive" || !isOpenAIReasoningModel(model)) return undefined;
  // "minimal" exists only from gpt-5 on; the o-series reject it
  if (level === "minimal" && !/gpt-5/i.test(model)) return "low";
  // "xhigh" is accepted by a few models only; "high" by every reasoning model
  if (level === "xhigh") return "high";
  return level;
}

export function usageOf(parts: { input: number; output: number; cacheRead?: number; cacheWrite?: number }): Usage {
  const cacheRead = parts.cacheRead ?? 0;
  const cacheWrite = parts.cacheWrite ?? 0;
  return {
    input: parts.input,
    output: parts.output,
    cacheRead,
    cacheWrite,
    total: parts.input + parts.output + cacheRead + cacheWrite,
  };
}

function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * A client created on first use and then reused: SDK modules are imported only when their API is called, so a run
 * that talks to one API never loads the others. A failed creation is forgotten, so the next call tries again.
 */
/**
 * One SDK client per API key, each made on first use: an auth profile's key reaches the SDK the way it expects it
 * (its own auth header), and the clients are as many as the provider has profiles.
 */
export function lazyClientPerKey<T>(
  create: (apiKey: string | undefined, mode: "api_key" | "token" | undefined) => Promise<T>,
): (apiKey?: string, mode?: "api_key" | "token") => Promise<T> {
  const clients = new Map<string, () => Promise<T>>();
  return (apiKey, mode) => {
    const id = apiKey === undefined ? "" : `${mode === "token" ? "t" : "k"}:${apiKey}`;
    let get = clients.get(id);
    if (!get) {
      get = lazyClient(() => create(apiKey, mode));
      clients.set(id, get);
    }
    return get();
  };
}

export function lazyClient<T>(create: () => Promise<T>): () => Promise<T> {
  let client: Promise<T> | undefined;
  return () => {
    if (!client) {
      client = create();
      client.catch(() => {
        client = undefined;
      });
    }
    return client;
  };
}

/**
 * Marks a failure that comes after the model streamed something (text, thinking, a tool call) as `afterOutput`: the
 * retry policy treats a connection lost before any output differently from one lost mid-answer (SPEC 16). A plain
 * iterator rather than an async generator, so the hot path pays one extra `then` per event and nothing more.
 */
export function flagOutput(stream: AsyncIterable<ModelStreamEvent>): AsyncIterable<ModelStreamEvent> {
  return {
    [Symbol.asyncIterator]() {
      const inner = stream[Symbol.asyncIterator]();
      let output = false;
      const onResult = (result: IteratorResult<ModelStreamEvent>) => {
        if (!result.done && result.value.type !== "done") output = true;
        return result;
      };
      const onError = (err: unknown): never => {
        throw output && err instanceof ProviderError ? markAfterOutput(err) : err;
      };
      return {
        next: () => inner.next().then(onResult, onError),
        return: (value?: unknown) =>
          inner.return ? inner.return(value) : Promise.resolve({ done: true as const, value: undefined }),
      };
    },
  };
}

/** An image part whose bytes were not loaded (a history row whose blob is gone) goes to the model as this text. */
export function missingImageText(image: ImageBlock): string {
  return `[image ${image.mimeType} not available]`;
}

/**
 * A message's parts with every image that carries no bytes turned into a text note, so a serializer meets only
 * images it can send.
 */
export function sendableParts(parts: MessagePart[]): Array<MessagePart & ({ type: "text" } | { data: string })> {
  return parts.map((part) =>
    part.type === "image" && part.data === undefined
      ? { type: "text", text: missingImageText(part) }
      : (part as MessagePart & ({ type: "text" } | { data: string })),
  );
}

export function dataUrl(image: ImageBlock & { data: string }): string {
  return `data:${image.mimeType};base64,${image.data}`;
}
