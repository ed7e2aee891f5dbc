import { estimateTokens } from "../../prompt/context-budget.js";
import type { ChatMessage, ImageBlock, MessageContent, ToolSpec, Usage } from "../../providers/types.js";

/**
 * Token estimates for compaction decisions. Like prompt/context-budget.ts this is chars/4 and no tokenizer: it runs
 * before every model call and only has to be deterministic and roughly right. A small per-message overhead stands in
 * for the role and framing tokens every wire format adds.
 */

export const MESSAGE_OVERHEAD_TOKENS = 4;

/** An image whose size is not recorded counts as a 1,200 × 1,200 one, the largest image-prepare.ts sends. */
const UNKNOWN_IMAGE_PIXELS = 1200 * 1200;

/**
 * Characters an image counts as: providers bill an image by its pixels (Anthropic: about w·h/750 tokens), never by
 * its base64, so the base64 length must not reach the estimate.
 */
export function imageChars(image: ImageBlock): number {
  const pixels = image.width && image.height ? image.width * image.height : UNKNOWN_IMAGE_PIXELS;
  return Math.ceil(pixels / 750) * 4;
}

function contentChars(content: MessageContent): number {
  if (typeof content === "string") return content.length;
  let chars = 0;
  for (const part of content) chars += part.type === "text" ? part.text.length : imageChars(part);
  return chars;
}

/** Characters the estimate counts for one message (text, thinking, tool names and argument JSON). */
export function messageChars(message: ChatMessage): number {
  switch (message.role) {
    case "user":
      return contentChars(message.content);
    case "toolResult":
      return contentChars(message.content) + message.toolName.length;
    case "assistant": {
      let chars = 0;
      for (const block of message.content) {
        if (block.type === "text") chars += block.text.length;
        else if (block.type === "thinking") chars += block.thinking.length;
        else chars += block.name.length + JSON.stringify(block.arguments).length;
      }
      return chars;
    }
  }
}

export function estimateMessageTokens(message: ChatMessage): number {
  return Math.ceil(messageChars(message) / 4) + MESSAGE_OVERHEAD_TOKENS;
}

export function estimateMessagesTokens(messages: readonly ChatMessage[]): number {
  let total = 0;
  for (const m of messages) total += estimateMessageTokens(m);
  return total;
}

/**
 * Length of a schema's JSON, per schema object: the runtime hands the same `parameters` object to every run (the
 * assumption the provider's request body and the argument validator's caches make too: a registered schema is not
 * changed in place), and the schemas are most of the tools' JSON, which the first model call of every run estimated.
 */
const schemaChars = new WeakMap<object, number>();

/** `JSON.stringify(spec).length`, with the schema's part remembered (JSON lengths do not depend on key order). */
function toolSpecChars(spec: ToolSpec): number {
  const params = spec.parameters as unknown;
  // anything but the plain { name, description, parameters } shape is measured whole, as before
  if (
    typeof params !== "object" ||
    params === null ||
    typeof spec.name !== "string" ||
    typeof spec.description !== "string" ||
    Object.keys(spec).length !== 3
  ) {
    return JSON.stringify(spec).length;
  }
  let chars = schemaChars.get(params);
  if (chars === undefined) {
    chars = JSON.stringify(params).length;
    schemaChars.set(params, chars);
  }
  // {"name":…,"description":…,"parameters":…}
  return (
    '{"name":,"description":,"parameters":}'.length +
    JSON.stringify(spec.name).length +
    JSON.stringify(spec.description).length +
    chars
  );
}

/** Characters of `JSON.stringify(tools)`. */
export function toolsChars(tools: readonly ToolSpec[]): number {
  // the brackets and the commas between entries
  let chars = 1 + tools.length;
  for (const spec of tools) chars += toolSpecChars(spec);
  return chars;
}

/** The whole request as the model would see it: system prompt, tool schemas and messages. */
export function estimateContextTokens(
  messages: readonly ChatMessage[],
  system?: string,
  tools?: readonly ToolSpec[],
): number {
  const toolTokens = tools && tools.length > 0 ? Math.ceil(toolsChars(tools) / 4) : 0;
  return estimateTokens(system ?? "") + toolTokens + estimateMessagesTokens(messages);
}

export interface ContextProjectionInput {
  /** usage the provider reported for the previous model call of this context, if any */
  lastUsage?: Usage;
  /**
   * How many leading messages of `messages` that usage already covers: the messages sent in that call plus the
   * reply it produced. Replacing the history (after a compaction) invalidates it: drop `lastUsage` then.
   */
  coveredMessageCount?: number;
  messages: readonly ChatMessage[];
  system?: string;
  tools?: readonly ToolSpec[];
}

/** Context size of the whole last call: what was read (cached or not) plus what was written. */
function usageContextTokens(usage: Usage): number {
  return usage.input + usage.cacheRead + usage.cacheWrite + usage.output;
}

/**
 * Projected size of the next request. The provider's own count for the previous call is exact where our estimate
 * is crude, so it is preferred; only the messages appended since are estimated. Without usage (first call, a
 * provider that reports none, or a history that was replaced) the whole request is estimated.
 */
export function projectContextTokens(input: ContextProjectionInput): number {
  const { lastUsage, coveredMessageCount, messages } = input;
  const usable =
    lastUsage !== undefined &&
    usageContextTokens(lastUsage) > 0 &&
    coveredMessageCount !== undefined &&
    coveredMessageCount >= 0 &&
    coveredMessageCount <= messages.length;
  if (!usable) return estimateContextTokens(messages, input.system, input.tools);
  return usageContextTokens(lastUsage) + estimateMessagesTokens(messages.slice(coveredMessageCount));
}
