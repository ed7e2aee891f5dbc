import type { AgentFinal, Usage } from "../../protocol/run.js";

/*
 * The answers of POST /v1/chat/completions and POST /v1/responses in OpenAI's shapes, built from a run's final.
 * Ids carry the run id (`chatcmpl-<runId>`, `resp_<runId>`), so a log line or the console finds the run.
 */

export interface TokenCounts {
  prompt: number;
  completion: number;
  total: number;
  cached: number;
}

/** The run's usage: every token sent to the model (cache reads and writes too) is a prompt token. */
export function tokenCounts(usage: Usage | undefined): TokenCounts {
  const u = usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
  const prompt = u.input + u.cacheRead + u.cacheWrite;
  return { prompt, completion: u.output, total: prompt + u.output, cached: u.cacheRead };
}

/** OpenAI's finish_reason for the run's stop reason. */
export function finishReason(final: AgentFinal): "stop" | "length" {
  const why = final.stopReason ?? "";
  return why === "length" || why === "max_tokens" ? "length" : "stop";
}

const seconds = (ms: number) => Math.floor(ms / 1000);

export function chatCompletionId(runId: string): string {
  return `chatcmpl-${runId}`;
}

export function chatCompletion(opts: {
  runId: string;
  model: string;
  createdMs: number;
  final: AgentFinal;
  text: string;
}) {
  const t = tokenCounts(opts.final.result.meta.usage);
  return {
    id: chatCompletionId(opts.runId),
    object: "chat.completion",
    created: seconds(opts.createdMs),
    model: opts.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: opts.text, refusal: null },
        logprobs: null,
        finish_reason: finishReason(opts.final),
      },
    ],
    usage: {
      prompt_tokens: t.prompt,
      completion_tokens: t.completion,
      total_tokens: t.total,
      prompt_tokens_details: { cached_tokens: t.cached },
    },
  };
}

/** One `chat.completion.chunk`: a role or content delta, or the last chunk with the finish reason. */
export function chatChunk(opts: {
  runId: string;
  model: string;
  createdMs: number;
  delta: { role?: "assistant"; content?: string };
  finish?: "stop" | "length";
}) {
  return {
    id: chatCompletionId(opts.runId),
    object: "chat.completion.chunk",
    created: seconds(opts.createdMs),
    model: opts.model,
    choices: [{ index: 0, delta: opts.delta, logprobs: null, finish_reason: opts.finish ?? null }],
  };
}

/** stream_options.include_usage: one chunk with no choice and the usage, before [DONE]. */
export function chatUsageChunk(opts: { runId: string; model: string; createdMs: number; final: AgentFinal }) {
  const t = tokenCounts(opts.final.result.meta.usage);
  return {
    id: chatCompletionId(opts.runId),
    object: "chat.completion.chunk",
    created: seconds(opts.createdMs),
    model: opts.model,
    choices: [],
    usage: { prompt_tokens: t.prompt, completion_tokens: t.completion, total_tokens: t.total },
  };
}

export function responseId(runId: string): string {
  return `resp_${runId}`;
}

/** `resp_<runId>` → the run id (previous_response_id), undefined for another shape */
export function runIdOfResponse(id: string): string | undefined {
  return id.startsWith("resp_") && id.length > 5 ? id.slice(5) : undefined;
}

export function messageItemId(runId: string): string {
  return `msg_${runId}`;
}

export type ResponseStatus = "in_progress" | "completed" | "failed";

export function outputText(text: string) {
  return { type: "output_text", text, annotations: [] as unknown[] };
}

export function messageItem(runId: string, status: "in_progress" | "completed", text?: string) {
  return {
    type: "message",
    id: messageItemId(runId),
    status,
    role: "assistant",
    content: text === undefined ? [] : [outputText(text)],
  };
}

/** A Response object (the answer, and the payload of response.created / completed / failed). */
export function responseObject(opts: {
  runId: string;
  model: string;
  createdMs: number;
  status: ResponseStatus;
  text?: string;
  final?: AgentFinal;
  error?: { code: string; message: string };
}) {
  const t = opts.final ? tokenCounts(opts.final.result.meta.usage) : undefined;
  return {
    id: responseId(opts.runId),
    object: "response",
    created_at: seconds(opts.createdMs),
    status: opts.status,
    model: opts.model,
    output: opts.text === undefined ? [] : [messageItem(opts.runId, "completed", opts.text)],
    output_text: opts.text ?? "",
    error: opts.error ?? null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: false,
    tool_choice: "auto",
    tools: [],
    temperature: null,
    top_p: null,
    usage: t
      ? {
          input_tokens: t.prompt,
          input_tokens_details: { cached_tokens: t.cached },
          output_tokens: t.completion,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: t.total,
        }
      : null,
  };
}
