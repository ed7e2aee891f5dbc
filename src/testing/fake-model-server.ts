/**
 * A fake model server for tests and benchmarks: a real HTTP server on 127.0.0.1 that answers the three wire APIs
 * Loopgate speaks, at their real paths and in their real streaming formats, so that code under test goes through the
 * genuine SDK and HTTP stack:
 *
 *   POST /v1/chat/completions   OpenAI Chat Completions   `data: {chunk}` lines ending in `data: [DONE]`
 *   POST /v1/responses          OpenAI Responses          `event: response.*` + `data: {...}`
 *   POST /v1/messages           Anthropic Messages        `event: message_start` ... `event: message_stop`
 *
 * Script what the model says with `enqueue(turn, ...)` (one turn per request, first in first out) or with a
 * `respond(request)` function consulted when the queue is empty; without either it answers a short text. Every
 * request is captured (path, headers, parsed JSON body) in `requests`.
 *
 * ```ts
 * import { startFakeModelServer } from "loopgate/dist/testing/fake-model-server.js";
 *
 * const server = await startFakeModelServer();
 * server.enqueue(
 *   { toolCalls: [{ name: "read", arguments: { path: "README.md" } }] },
 *   { text: ["The README ", "says hello."] },
 * );
 * // point a provider (or any OpenAI / Anthropic client) at server.baseUrl, e.g. "http://127.0.0.1:41234/v1"
 * await server.close();
 * ```
 *
 * A turn can also fail (`error`: an HTTP error with the API's error body and optional headers such as
 * `Retry-After`; enqueue it N times to fail the next N requests; `streamError`: an error event after
 * the content), stop mid-stream (`stopAfterChunks`, optionally dropping the connection), or be slow (`delayMs`
 * before the first byte, `chunkDelayMs` between chunks). Only `stream: true` requests are supported.
 *
 * It does no work per request beyond parsing the body and writing the chunks (a turn without delays is written in
 * one go), so it doubles as a zero-latency model for benchmarks; pass `captureRequests: false` there so memory
 * does not grow with the request count. Clients that disconnect mid-stream are tolerated.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeToolCall {
  /** defaults to a generated `call_N` (OpenAI) / `toolu_N` (Anthropic) */
  id?: string;
  name: string;
  /** an object is sent as one JSON fragment; an array of strings is sent as those raw fragments, one per chunk */
  arguments: Record<string, unknown> | string[];
}

export interface FakeTurn {
  /** the answer text; an array is streamed as one delta per element */
  text?: string | string[];
  /** the model the answer says it came from (default: the one requested) */
  model?: string;
  /** reasoning streamed before the answer (`reasoning_content`, reasoning summary, or an Anthropic thinking block) */
  thinking?: string | string[];
  /** Anthropic only: the thinking block's signature (default `"fake-signature"`) */
  thinkingSignature?: string;
  toolCalls?: FakeToolCall[];
  /** token counts reported at the end (default: a rough count of request and answer characters / 4) */
  usage?: { input: number; output: number; cacheRead?: number };
  /** end as if the output token limit was hit (finish_reason "length" / incomplete / "max_tokens") */
  maxTokensReached?: boolean;
  /** answer with this HTTP error instead of a stream; `body` is sent as JSON, use the API's own error shape */
  error?: { status: number; body: unknown; headers?: Record<string, string> };
  /** after the content, send an error event in the stream instead of finishing */
  streamError?: { type?: string; code?: string; message: string };
  /** send only the first N SSE events, then end the response without finishing */
  stopAfterChunks?: number;
  /** with stopAfterChunks: destroy the socket instead of ending the response cleanly */
  dropConnection?: boolean;
  /** wait this long before the first byte (status line and headers included) */
  delayMs?: number;
  /** wait this long between SSE events */
  chunkDelayMs?: number;
}

export interface CapturedRequest {
  /** path without the query string, e.g. "/v1/chat/completions" */
  path: string;
  headers: IncomingHttpHeaders;
  /** the parsed JSON body */
  body: Record<string, unknown>;
}

export interface FakeModelServerOptions {
  /** decides the turn when the queue is empty (default: a short text reply) */
  respond?: (request: CapturedRequest) => FakeTurn;
  /** keep every request in `requests` (default true) */
  captureRequests?: boolean;
}

export interface FakeModelServer {
  /** "http://127.0.0.1:PORT/v1": the base URL OpenAI clients expect (the Loopgate Anthropic provider accepts it too) */
  readonly baseUrl: string;
  readonly port: number;
  readonly requests: CapturedRequest[];
  /** queue turns; each request takes the next one */
  enqueue(...turns: FakeTurn[]): void;
  close(): Promise<void>;
}

/**
 * A turn that fails like OpenAI does, e.g. `openAIErrorTurn(429, "Rate limit reached", "rate_limit_exceeded")`;
 * `headers` go out with it, e.g. `{ "retry-after": "1" }`.
 */
export function openAIErrorTurn(
  status: number,
  message: string,
  code: string | null = null,
  headers?: Record<string, string>,
): FakeTurn {
  const type = status === 429 ? "requests" : status >= 500 ? "server_error" : "invalid_request_error";
  return { error: { status, body: { error: { message, type, param: null, code } }, headers } };
}

/** A turn that fails like Anthropic does, e.g. `anthropicErrorTurn(529, "overloaded_error", "Overloaded")`. */
export function anthropicErrorTurn(
  status: number,
  type: string,
  message: string,
  headers?: Record<string, string>,
): FakeTurn {
  return { error: { status, body: { type: "error", error: { type, message } }, headers } };
}

/**
 * The API key a request carried: OpenAI's `Authorization: Bearer <key>` or Anthropic's `x-api-key`. With `respond`,
 * a fake can answer per key, e.g. a rate limit for one key and text for another:
 * `respond: (r) => (requestApiKey(r) === "key-1" ? openAIErrorTurn(429, "Rate limit reached") : { text: "hi" })`.
 */
export function requestApiKey(request: Pick<CapturedRequest, "headers">): string | undefined {
  const anthropic = request.headers["x-api-key"];
  if (typeof anthropic === "string" && anthropic) return anthropic;
  const auth = request.headers.authorization;
  return typeof auth === "string" && /^Bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
}

type Api = "chat" | "responses" | "messages";

const ROUTES: Record<string, Api> = {
  "/v1/chat/completions": "chat",
  "/v1/responses": "responses",
  "/v1/messages": "messages",
};

const DEFAULT_TURN: FakeTurn = { text: ["Hello", " from the", " fake model."] };

export async function startFakeModelServer(opts: FakeModelServerOptions = {}): Promise<FakeModelServer> {
  const queue: FakeTurn[] = [];
  const requests: CapturedRequest[] = [];
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let counter = 0;
  const ids = { next: () => ++counter };

  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  const server = createServer((req, res) => {
    // a client that hangs up mid-stream makes writes fail; that is expected, not a server problem
    res.on("error", () => {});
    req.on("error", () => {});
    const path = (req.url ?? "/").split("?")[0];
    const api = req.method === "POST" ? ROUTES[path] : undefined;
    if (!api) {
      sendJson(res, 404, {
        error: { message: `fake model server: no route for ${req.method} ${path}`, type: "not_found" },
      });
      return;
    }
    readBody(req, (raw) => {
      let body: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(raw);
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object");
        body = parsed as Record<string, unknown>;
      } catch {
        sendJson(res, 400, {
          error: { message: "fake model server: the body is not a JSON object", type: "invalid_request_error" },
        });
        return;
      }
      const captured: CapturedRequest = { path, headers: req.headers, body };
      if (opts.captureRequests !== false) requests.push(captured);
      const turn = queue.shift() ?? opts.respond?.(captured) ?? DEFAULT_TURN;
      const start = () => answer(res, api, turn, body, raw.length, ids, later);
      if (turn.delayMs && turn.delayMs > 0) later(turn.delayMs, start);
      else start();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    enqueue(...turns) {
      queue.push(...turns);
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        // keep-alive sockets of SDK clients would otherwise hold close() open until they time out
        server.closeAllConnections();
      });
    },
  };
}

function readBody(req: IncomingMessage, done: (raw: string) => void): void {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => done(chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8")));
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function answer(
  res: ServerResponse,
  api: Api,
  turn: FakeTurn,
  body: Record<string, unknown>,
  requestChars: number,
  ids: { next(): number },
  later: (ms: number, fn: () => void) => void,
): void {
  if (res.destroyed) return;
  if (turn.error) {
    sendJson(res, turn.error.status, turn.error.body, turn.error.headers);
    return;
  }
  if (body.stream !== true) {
    sendJson(res, 400, {
      error: {
        message: "fake model server: only streaming requests (stream: true) are supported",
        type: "invalid_request_error",
      },
    });
    return;
  }
  const script = scriptOf(turn, body, requestChars, ids);
  const frames =
    api === "chat" ? chatFrames(script, body) : api === "responses" ? responsesFrames(script) : messagesFrames(script);
  const cut = turn.stopAfterChunks !== undefined && turn.stopAfterChunks < frames.length;
  const toSend = cut ? frames.slice(0, turn.stopAfterChunks) : frames;
  const finish = () => {
    if (cut && turn.dropConnection) res.destroy();
    else res.end();
  };

  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  if (!turn.chunkDelayMs || turn.chunkDelayMs <= 0) {
    // one write: the cheapest way to hand over a whole turn, and what the benchmark relies on
    if (cut && turn.dropConnection) res.write(toSend.join(""), () => res.destroy());
    else res.end(toSend.join(""));
    return;
  }
  const delay = turn.chunkDelayMs;
  let next = 0;
  const pump = () => {
    if (res.destroyed || res.writableEnded) return;
    if (next >= toSend.length) {
      finish();
      return;
    }
    res.write(toSend[next++]);
    later(delay, pump);
  };
  pump();
}

/** A turn normalized into what all three encoders need. */
interface Script {
  id: number;
  model: string;
  thinking: string[];
  signature: string;
  text: string[];
  calls: Array<{ n: number; id?: string; name: string; fragments: string[] }>;
  usage: { input: number; output: number; cacheRead: number };
  maxTokensReached: boolean;
  streamError?: { type?: string; code?: string; message: string };
}

function scriptOf(
  turn: FakeTurn,
  body: Record<string, unknown>,
  requestChars: number,
  ids: { next(): number },
): Script {
  const pieces = (value: string | string[] | undefined) =>
    value === undefined ? [] : typeof value === "string" ? [value] : value;
  const text = pieces(turn.text);
  const thinking = pieces(turn.thinking);
  const calls = (turn.toolCalls ?? []).map((call) => ({
    n: ids.next(),
    id: call.id,
    name: call.name,
    fragments: Array.isArray(call.arguments) ? call.arguments : [JSON.stringify(call.arguments)],
  }));
  let outChars = 0;
  for (const piece of [...text, ...thinking]) outChars += piece.length;
  for (const call of calls) for (const fragment of call.fragments) outChars += fragment.length;
  return {
    id: ids.next(),
    model: turn.model ?? (typeof body.model === "string" ? body.model : "fake-model"),
    thinking,
    signature: turn.thinkingSignature ?? "fake-signature",
    text,
    calls,
    usage: {
      input: turn.usage?.input ?? Math.ceil(requestChars / 4),
      output: turn.usage?.output ?? Math.max(1, Math.ceil(outChars / 4)),
      cacheRead: turn.usage?.cacheRead ?? 0,
    },
    maxTokensReached: turn.maxTokensReached === true,
    streamError: turn.streamError,
  };
}

// --- OpenAI Chat Completions ------------------------------------------------------------------------------------

function chatFrames(s: Script, body: Record<string, unknown>): string[] {
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  const withUsage = streamOptions?.include_usage === true;
  const head = `{"id":"chatcmpl-fake${s.id}","object":"chat.completion.chunk","created":${Math.floor(Date.now() / 1000)},"model":${JSON.stringify(s.model)},"system_fingerprint":null,"choices":`;
  const tail = withUsage ? `,"usage":null}` : "}";
  const frame = (delta: unknown, finish: string | null = null) =>
    `data: ${head}[{"index":0,"delta":${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]${tail}\n\n`;

  const frames = [frame({ role: "assistant", content: "", refusal: null })];
  for (const piece of s.thinking) frames.push(frame({ reasoning_content: piece }));
  for (const piece of s.text) frames.push(frame({ content: piece }));
  s.calls.forEach((call, index) => {
    frames.push(
      frame({
        tool_calls: [
          { index, id: call.id ?? `call_${call.n}`, type: "function", function: { name: call.name, arguments: "" } },
        ],
      }),
    );
    for (const fragment of call.fragments)
      frames.push(frame({ tool_calls: [{ index, function: { arguments: fragment } }] }));
  });
  if (s.streamError) {
    const { message, type = "server_error", code = null } = s.streamError;
    frames.push(`data: ${JSON.stringify({ error: { message, type, param: null, code } })}\n\n`);
    return frames;
  }
  const finish = s.maxTokensReached ? "length" : s.calls.length > 0 ? "tool_calls" : "stop";
  frames.push(frame({}, finish));
  if (withUsage) {
    const usage = {
      prompt_tokens: s.usage.input + s.usage.cacheRead,
      completion_tokens: s.usage.output,
      total_tokens: s.usage.input + s.usage.cacheRead + s.usage.output,
      prompt_tokens_details: { cached_tokens: s.usage.cacheRead, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
    };
    frames.push(`data: ${head}[],"usage":${JSON.stringify(usage)}}\n\n`);
  }
  frames.push("data: [DONE]\n\n");
  return frames;
}

// --- OpenAI Responses --------------------------------------------------------------------------------------------

function responsesFrames(s: Script): string[] {
  const frames: string[] = [];
  let seq = 0;
  const event = (type: string, data: Record<string, unknown>) => {
    frames.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  };
  const response = (status: string, output: unknown[], extra: Record<string, unknown> = {}) => ({
    id: `resp_fake${s.id}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    model: s.model,
    output,
    usage: null,
    ...extra,
  });

  const output: unknown[] = [];
  event("response.created", { response: response("in_progress", []) });
  event("response.in_progress", { response: response("in_progress", []) });

  if (s.thinking.length > 0) {
    const output_index = output.length;
    const item_id = `rs_fake${s.id}`;
    const full = s.thinking.join("");
    const item = { id: item_id, type: "reasoning", summary: [] as unknown[] };
    event("response.output_item.added", { output_index, item });
    event("response.reasoning_summary_part.added", {
      item_id,
      output_index,
      summary_index: 0,
      part: { type: "summary_text", text: "" },
    });
    for (const delta of s.thinking) {
      event("response.reasoning_summary_text.delta", { item_id, output_index, summary_index: 0, delta });
    }
    event("response.reasoning_summary_text.done", { item_id, output_index, summary_index: 0, text: full });
    const part = { type: "summary_text", text: full };
    event("response.reasoning_summary_part.done", { item_id, output_index, summary_index: 0, part });
    const done = { ...item, summary: [part] };
    event("response.output_item.done", { output_index, item: done });
    output.push(done);
  }

  if (s.text.length > 0) {
    const output_index = output.length;
    const item_id = `msg_fake${s.id}`;
    const full = s.text.join("");
    const item = { id: item_id, type: "message", status: "in_progress", role: "assistant", content: [] as unknown[] };
    event("response.output_item.added", { output_index, item });
    event("response.content_part.added", {
      item_id,
      output_index,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] },
    });
    for (const delta of s.text) {
      event("response.output_text.delta", { item_id, output_index, content_index: 0, delta, logprobs: [] });
    }
    event("response.output_text.done", { item_id, output_index, content_index: 0, text: full, logprobs: [] });
    const part = { type: "output_text", text: full, annotations: [] };
    event("response.content_part.done", { item_id, output_index, content_index: 0, part });
    const done = { ...item, status: "completed", content: [part] };
    event("response.output_item.done", { output_index, item: done });
    output.push(done);
  }

  for (const call of s.calls) {
    const output_index = output.length;
    const item_id = `fc_fake${call.n}`;
    const args = call.fragments.join("");
    const item = {
      id: item_id,
      type: "function_call",
      status: "in_progress",
      arguments: "",
      call_id: call.id ?? `call_${call.n}`,
      name: call.name,
    };
    event("response.output_item.added", { output_index, item });
    for (const delta of call.fragments)
      event("response.function_call_arguments.delta", { item_id, output_index, delta });
    event("response.function_call_arguments.done", { item_id, output_index, name: call.name, arguments: args });
    const done = { ...item, status: "completed", arguments: args };
    event("response.output_item.done", { output_index, item: done });
    output.push(done);
  }

  if (s.streamError) {
    const { message, code = "server_error" } = s.streamError;
    event("response.failed", { response: response("failed", output, { error: { code, message } }) });
    return frames;
  }
  const usage = {
    input_tokens: s.usage.input + s.usage.cacheRead,
    input_tokens_details: { cached_tokens: s.usage.cacheRead },
    output_tokens: s.usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: s.usage.input + s.usage.cacheRead + s.usage.output,
  };
  if (s.maxTokensReached) {
    event("response.incomplete", {
      response: response("incomplete", output, { usage, incomplete_details: { reason: "max_output_tokens" } }),
    });
  } else {
    event("response.completed", { response: response("completed", output, { usage }) });
  }
  return frames;
}

// --- Anthropic Messages ------------------------------------------------------------------------------------------

function messagesFrames(s: Script): string[] {
  const frames: string[] = [];
  const event = (type: string, data: Record<string, unknown>) => {
    frames.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  event("message_start", {
    message: {
      id: `msg_fake${s.id}`,
      type: "message",
      role: "assistant",
      model: s.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: s.usage.input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: s.usage.cacheRead,
        output_tokens: 1,
      },
    },
  });
  event("ping", {});

  let index = 0;
  if (s.thinking.length > 0) {
    event("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } });
    for (const thinking of s.thinking)
      event("content_block_delta", { index, delta: { type: "thinking_delta", thinking } });
    event("content_block_delta", { index, delta: { type: "signature_delta", signature: s.signature } });
    event("content_block_stop", { index });
    index++;
  }
  if (s.text.length > 0) {
    event("content_block_start", { index, content_block: { type: "text", text: "" } });
    for (const text of s.text) event("content_block_delta", { index, delta: { type: "text_delta", text } });
    event("content_block_stop", { index });
    index++;
  }
  for (const call of s.calls) {
    event("content_block_start", {
      index,
      content_block: { type: "tool_use", id: call.id ?? `toolu_fake${call.n}`, name: call.name, input: {} },
    });
    for (const partial_json of call.fragments) {
      event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } });
    }
    event("content_block_stop", { index });
    index++;
  }
  if (s.streamError) {
    const { message, type = "overloaded_error" } = s.streamError;
    event("error", { error: { type, message } });
    return frames;
  }
  const stopReason = s.maxTokensReached ? "max_tokens" : s.calls.length > 0 ? "tool_use" : "end_turn";
  event("message_delta", {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: s.usage.output },
  });
  event("message_stop", {});
  return frames;
}
