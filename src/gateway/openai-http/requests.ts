import { z } from "zod";
import { type ParamIssue, parseWith } from "../../protocol/params.js";
import { OpenAiHttpError } from "./errors.js";

/*
 * The request bodies of POST /v1/chat/completions and POST /v1/responses, as far as Loopgate reads them. The agent
 * answers the newest user message of a session whose transcript is the history, so earlier messages are not
 * replayed; system / developer text (and the Responses API's `instructions`) becomes the run's extra system prompt.
 * What would change the answer's shape and cannot be honoured (tool calls, several choices, log probabilities,
 * structured output) is refused with 400 naming the field; sampling knobs (temperature, max_tokens, ...) belong to
 * the agent's model config and are ignored.
 */

const text = z.string();

const chatPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const chatMessage = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: z.union([text, z.array(chatPart), z.null()]).optional(),
});

const unsupported = {
  tools: z.array(z.unknown()).optional(),
  functions: z.array(z.unknown()).optional(),
  tool_choice: z.unknown().optional(),
  n: z.number().int().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().nullable().optional(),
  response_format: z.looseObject({ type: z.string() }).optional(),
  modalities: z.array(z.string()).optional(),
  audio: z.unknown().optional(),
};

const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(chatMessage).min(1),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  user: z.string().min(1).optional(),
  ...unsupported,
});

const responsesPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const responsesItem = z.looseObject({
  type: z.string().optional(),
  role: z.enum(["user", "assistant", "system", "developer"]).optional(),
  content: z.union([text, z.array(responsesPart)]).optional(),
});

const responsesRequestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([text.min(1), z.array(responsesItem).min(1)]),
  instructions: z.string().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  user: z.string().min(1).optional(),
  previous_response_id: z.string().min(1).nullable().optional(),
  tools: z.array(z.unknown()).optional(),
  tool_choice: z.unknown().optional(),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).optional() }).optional(),
});

/** What a request asks of the agent, whichever API it came in. */
export interface TurnRequest {
  model: string;
  /** the newest user message: the run's input */
  message: string;
  /** system / developer messages and `instructions`, joined: the run's extra system prompt */
  system?: string;
  stream: boolean;
  /** chat completions: stream_options.include_usage */
  includeUsage: boolean;
  user?: string;
  /** responses: the earlier response this one continues (its session) */
  previousResponseId?: string;
}

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new OpenAiHttpError(400, "the request body must be a JSON object");
  const parsed = parseWith(schema, body, "body");
  if (parsed.ok) return parsed.value;
  const issues = (parsed.error.details as { issues?: ParamIssue[] } | undefined)?.issues;
  const param = issues?.[0]?.path.replace(/^body\.?/, "") || undefined;
  throw new OpenAiHttpError(400, parsed.error.message, { code: "invalid_request", ...(param ? { param } : {}) });
}

function refuse(param: string, why: string): never {
  throw new OpenAiHttpError(400, `${param}: ${why}`, { code: "unsupported_parameter", param });
}

/** The text of a message's content: a string, or its text parts (an image or file part is refused). */
function contentText(content: unknown, param: string): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  const parts = content as Array<{ type: string; text?: string }>;
  return parts
    .map((p, i) => {
      if (p.type === "text" || p.type === "input_text" || p.type === "output_text") return p.text ?? "";
      return refuse(`${param}[${i}].type`, `"${p.type}" parts are not supported by this gateway (text only)`);
    })
    .join("");
}

function joinSystem(texts: string[]): string | undefined {
  const kept = texts.map((t) => t.trim()).filter((t) => t !== "");
  return kept.length > 0 ? kept.join("\n\n") : undefined;
}

export function chatCompletionRequest(body: unknown): TurnRequest {
  const req = parseBody(chatRequestSchema, body);
  if (req.tools?.length || req.functions?.length)
    refuse(
      req.tools?.length ? "tools" : "functions",
      "client-side tools are not supported: the agent runs its own tools, and their activity is not exposed as tool calls",
    );
  if (req.tool_choice !== undefined && req.tool_choice !== "none" && req.tool_choice !== "auto")
    refuse("tool_choice", 'only "auto" or "none" (the agent chooses its own tools)');
  if (req.n !== undefined && req.n !== 1) refuse("n", "only one choice per request (n: 1)");
  if (req.logprobs) refuse("logprobs", "log probabilities are not available");
  if (req.top_logprobs) refuse("top_logprobs", "log probabilities are not available");
  if (req.response_format && req.response_format.type !== "text")
    refuse("response_format", `"${req.response_format.type}" is not supported (text only)`);
  if (req.modalities?.some((m) => m !== "text")) refuse("modalities", "text only");
  if (req.audio !== undefined && req.audio !== null) refuse("audio", "text only");
  const last = req.messages.length - 1;
  const newest = req.messages[last];
  if (newest.role !== "user")
    refuse(
      `messages[${last}].role`,
      `the last message must be the user's (the agent answers it), got "${newest.role}"`,
    );
  const message = contentText(newest.content, `messages[${last}].content`);
  if (message.trim() === "") refuse(`messages[${last}].content`, "the user message is empty");
  const system = joinSystem(
    req.messages.flatMap((m, i) =>
      m.role === "system" || m.role === "developer" ? [contentText(m.content, `messages[${i}].content`)] : [],
    ),
  );
  return {
    model: req.model,
    message,
    ...(system ? { system } : {}),
    stream: req.stream === true,
    includeUsage: req.stream_options?.include_usage === true,
    ...(req.user ? { user: req.user } : {}),
  };
}

export function responsesRequest(body: unknown): TurnRequest {
  const req = parseBody(responsesRequestSchema, body);
  if (req.tools?.length)
    refuse(
      "tools",
      "client-side tools are not supported: the agent runs its own tools, and their activity is not exposed as function calls",
    );
  if (req.tool_choice !== undefined && req.tool_choice !== "none" && req.tool_choice !== "auto")
    refuse("tool_choice", 'only "auto" or "none" (the agent chooses its own tools)');
  const format = req.text?.format?.type;
  if (format !== undefined && format !== "text") refuse("text.format", `"${format}" is not supported (text only)`);
  let message: string;
  const system: string[] = req.instructions ? [req.instructions] : [];
  if (typeof req.input === "string") message = req.input;
  else {
    const items = req.input;
    items.forEach((item, i) => {
      if (item.type !== undefined && item.type !== "message")
        refuse(`input[${i}].type`, `"${item.type}" items are not supported (messages only)`);
      if (item.role === "system" || item.role === "developer")
        system.push(contentText(item.content, `input[${i}].content`));
    });
    const last = items.length - 1;
    if (items[last].role !== "user")
      refuse(`input[${last}].role`, `the last input item must be a user message (the agent answers it)`);
    message = contentText(items[last].content, `input[${last}].content`);
  }
  if (message.trim() === "") refuse("input", "the user message is empty");
  const joined = joinSystem(system);
  return {
    model: req.model,
    message,
    ...(joined ? { system: joined } : {}),
    stream: req.stream === true,
    includeUsage: true,
    ...(req.user ? { user: req.user } : {}),
    ...(req.previous_response_id ? { previousResponseId: req.previous_response_id } : {}),
  };
}
