/**
 * Behaviour every wire-API provider owes the agent loop, checked against each of them through the real SDK and real
 * HTTP on loopback (the fake model server speaks each API's own streaming format).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anthropicErrorTurn,
  type FakeModelServer,
  type FakeTurn,
  openAIErrorTurn,
  requestApiKey,
  startFakeModelServer,
} from "../testing/fake-model-server.js";
import { createAnthropicMessagesProvider } from "./anthropic-messages.js";
import { createOpenAICompletionsProvider } from "./openai-completions.js";
import { createOpenAIResponsesProvider } from "./openai-responses.js";
import { collect } from "./test-helpers.js";
import {
  type ApiKind,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  ProviderError,
  type ProviderInit,
} from "./types.js";

interface Case {
  name: ApiKind;
  create(init: ProviderInit): ModelProvider;
  rateLimited: FakeTurn;
  rateLimitMessage: string;
  serverError: FakeTurn;
  contextTooLong: FakeTurn;
  authFailure(leakedKey: string): FakeTurn;
  rateLimitedFor(headers: Record<string, string>): FakeTurn;
  modelNotFound: FakeTurn;
}

const cases: Case[] = [
  {
    name: "openai-completions",
    create: createOpenAICompletionsProvider,
    rateLimited: openAIErrorTurn(429, "Rate limit reached for gpt-4o in organization org-x", "rate_limit_exceeded"),
    rateLimitMessage: "Rate limit reached for gpt-4o in organization org-x",
    serverError: openAIErrorTurn(500, "The server had an error while processing your request."),
    contextTooLong: openAIErrorTurn(
      400,
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
      "context_length_exceeded",
    ),
    authFailure: (key) => openAIErrorTurn(401, `Incorrect API key provided: ${key}.`, "invalid_api_key"),
    rateLimitedFor: (headers) => openAIErrorTurn(429, "Rate limit reached", "rate_limit_exceeded", headers),
    modelNotFound: openAIErrorTurn(
      404,
      "The model `gpt-9` does not exist or you do not have access to it.",
      "model_not_found",
    ),
  },
  {
    name: "openai-responses",
    create: createOpenAIResponsesProvider,
    rateLimited: openAIErrorTurn(429, "Rate limit reached for gpt-4.1 on tokens per min", "rate_limit_exceeded"),
    rateLimitMessage: "Rate limit reached for gpt-4.1 on tokens per min",
    serverError: openAIErrorTurn(500, "The server had an error while processing your request."),
    contextTooLong: openAIErrorTurn(
      400,
      "Your input exceeds the context window of this model. Please adjust your input and try again.",
      "context_length_exceeded",
    ),
    authFailure: (key) => openAIErrorTurn(401, `Incorrect API key provided: ${key}.`, "invalid_api_key"),
    rateLimitedFor: (headers) => openAIErrorTurn(429, "Rate limit reached", "rate_limit_exceeded", headers),
    modelNotFound: openAIErrorTurn(
      404,
      "The model `gpt-9` does not exist or you do not have access to it.",
      "model_not_found",
    ),
  },
  {
    name: "anthropic-messages",
    create: createAnthropicMessagesProvider,
    rateLimited: anthropicErrorTurn(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit"),
    rateLimitMessage: "Number of request tokens has exceeded your rate limit",
    serverError: anthropicErrorTurn(500, "api_error", "Internal server error"),
    contextTooLong: anthropicErrorTurn(
      400,
      "invalid_request_error",
      "prompt is too long: 210345 tokens > 200000 maximum",
    ),
    authFailure: (key) => anthropicErrorTurn(401, "authentication_error", `invalid x-api-key ${key}`),
    rateLimitedFor: (headers) => anthropicErrorTurn(429, "rate_limit_error", "Rate limit reached", headers),
    modelNotFound: anthropicErrorTurn(404, "not_found_error", "model: claude-9"),
  },
];

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "test-model",
    system: "You are terse.",
    messages: [{ role: "user", content: "hi" }],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function failure(stream: AsyncIterable<ModelStreamEvent>): Promise<ProviderError> {
  try {
    await collect(stream);
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderError);
    return err as ProviderError;
  }
  throw new Error("expected the stream to fail, but it completed");
}

describe.each(cases)("$name provider", (c) => {
  let server: FakeModelServer;
  let provider: ModelProvider;

  beforeAll(async () => {
    server = await startFakeModelServer();
    provider = c.create({ id: "acme", api: c.name, baseUrl: server.baseUrl, apiKey: "sk-test", models: [] });
  });
  afterAll(() => server.close());

  it("streams text deltas in order and finishes with stop", async () => {
    server.enqueue({ text: ["The ", "answer ", "is 42."] });
    const events = await collect(provider.stream(request()));
    const deltas = events.filter((e) => e.type === "text_delta").map((e) => e.delta);
    expect(deltas).toEqual(["The ", "answer ", "is 42."]);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "stop" });
    expect(events.filter((e) => e.type === "done")).toHaveLength(1);
  });

  it("assembles tool-call arguments split over several chunks into one call", async () => {
    server.enqueue({
      toolCalls: [{ id: "call_a", name: "read", arguments: ['{"pa', 'th": "src/ma', 'in.ts", "limit"', ": 20}"] }],
    });
    const events = await collect(provider.stream(request()));
    expect(events.filter((e) => e.type === "tool_call")).toEqual([
      { type: "tool_call", id: "call_a", name: "read", arguments: { path: "src/main.ts", limit: 20 } },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "tool_calls" });
  });

  it("reports two parallel tool calls of one turn separately, in order", async () => {
    server.enqueue({
      text: "Reading both.",
      toolCalls: [
        { id: "call_1", name: "read", arguments: ['{"path":', '"a.txt"}'] },
        { id: "call_2", name: "exec", arguments: ['{"command":', '"ls -la"}'] },
      ],
    });
    const events = await collect(provider.stream(request()));
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls).toEqual([
      { type: "tool_call", id: "call_1", name: "read", arguments: { path: "a.txt" } },
      { type: "tool_call", id: "call_2", name: "exec", arguments: { command: "ls -la" } },
    ]);
  });

  it("reports token usage, with cache reads separate from fresh input", async () => {
    server.enqueue({ text: "ok", usage: { input: 120, output: 7, cacheRead: 30 } });
    const events = await collect(provider.stream(request()));
    expect(events.at(-1)).toEqual({
      type: "done",
      stopReason: "stop",
      usage: { input: 120, output: 7, cacheRead: 30, cacheWrite: 0, total: 157 },
      model: "test-model",
    });
  });

  it("names the model that answered as the API reports it (a dated snapshot of the one asked for)", async () => {
    server.enqueue({ text: "ok", model: "test-model-2026-11-30" });
    const events = await collect(provider.stream(request()));
    expect(events.at(-1)).toMatchObject({ type: "done", model: "test-model-2026-11-30" });
  });

  it("reports a turn cut off by the output token limit as length", async () => {
    server.enqueue({ text: "This sentence never", maxTokensReached: true });
    const events = await collect(provider.stream(request()));
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "length" });
  });

  it("turns HTTP 429 into a retryable rate_limit error carrying the API's message", async () => {
    server.enqueue(c.rateLimited);
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("rate_limit");
    expect(err.retryable).toBe(true);
    expect(err.status).toBe(429);
    expect(err.message).toBe(`acme: 429 rate limited: ${c.rateLimitMessage}`);
  });

  it("turns HTTP 500 into a retryable server error", async () => {
    server.enqueue(c.serverError);
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("server");
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/^acme: 500 server error: /);
  });

  it("recognises a prompt that does not fit the context window", async () => {
    server.enqueue(c.contextTooLong);
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("context_length");
    expect(err.retryable).toBe(false);
  });

  it("reports a rejected key as auth without repeating the key", async () => {
    const key = "sk-live-0123456789abcdefSECRET";
    const keyed = c.create({ id: "acme", api: c.name, baseUrl: server.baseUrl, apiKey: key, models: [] });
    server.enqueue(c.authFailure(key));
    const err = await failure(keyed.stream(request()));
    expect(err.kind).toBe("auth");
    expect(err.message).not.toContain(key);
  });

  it("sends each call's own key (an auth profile's) and keeps it out of the error when the endpoint echoes it", async () => {
    const perCall = "sk-profile-two-0123456789abcdefSECRET";
    server.enqueue({ text: "ok" }, { text: "ok" });
    await collect(provider.stream(request({ apiKey: perCall })));
    await collect(provider.stream(request()));
    const keys = server.requests.slice(-2).map((r) => requestApiKey(r));
    expect(keys).toEqual([perCall, "sk-test"]);
    server.enqueue(c.authFailure(perCall));
    const err = await failure(provider.stream(request({ apiKey: perCall })));
    expect(err.kind).toBe("auth");
    expect(err.message).not.toContain(perCall);
    expect(requestApiKey(server.requests.at(-1)!)).toBe(perCall);
  });

  it("fails with an error event sent in the middle of the stream instead of finishing", async () => {
    server.enqueue({ text: ["Part one, "], streamError: { message: "Overloaded" } });
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("server");
    expect(err.message).toContain("Overloaded");
    // an overloaded server is worth another try even mid-answer (the run resets what was shown)
    expect(err.afterOutput).toBe(true);
    expect(err.retryable).toBe(true);
  });

  it("treats a stream that stops mid-way as a network error, never as a finished answer", async () => {
    server.enqueue({ text: ["one ", "two ", "three ", "four"], stopAfterChunks: 3 });
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("network");
    expect(err.message).toContain("stream ended before the model finished");
  });

  it("treats a connection dropped before any output as a retryable network error", async () => {
    server.enqueue({ text: ["one ", "two ", "three ", "four"], stopAfterChunks: 1, dropConnection: true });
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("network");
    expect(err.afterOutput).toBe(false);
    expect(err.retryable).toBe(true);
  });

  it("does not retry a connection dropped after the model streamed text, and says output was seen", async () => {
    // 5 events reach past the first text delta in all three formats
    server.enqueue({ text: ["one ", "two ", "three ", "four"], stopAfterChunks: 5, dropConnection: true });
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("network");
    expect(err.afterOutput).toBe(true);
    expect(err.retryable).toBe(false);
  });

  it("carries the Retry-After seconds of a 429 as retryAfterMs", async () => {
    server.enqueue(c.rateLimitedFor({ "retry-after": "2" }));
    const err = await failure(provider.stream(request()));
    expect(err.kind).toBe("rate_limit");
    expect(err.retryAfterMs).toBe(2000);
  });

  it("sends a rate-limited request only once: retries are the run's decision, not the SDK's", async () => {
    const before = server.requests.length;
    // a tiny retry-after-ms would make an SDK with retries left on come straight back
    server.enqueue(
      c.rateLimitedFor({ "retry-after-ms": "2.5", "retry-after": "7" }),
      c.rateLimitedFor({ "retry-after-ms": "2.5" }),
      { text: "should not be reached" },
    );
    const err = await failure(provider.stream(request()));
    expect(err.retryAfterMs).toBe(2.5);
    expect(server.requests.length - before).toBe(1);
    // drain what this test queued, so later tests get their own turns
    await collect(provider.stream(request())).catch(() => undefined);
    await collect(provider.stream(request()));
  });

  it("reports an unknown model as model_not_found, which is not retried", async () => {
    server.enqueue(c.modelNotFound);
    const err = await failure(provider.stream(request({ model: "gpt-9" })));
    expect(err.kind).toBe("model_not_found");
    expect(err.status).toBe(404);
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^acme: 404 model not found: /);
  });

  it("stops promptly with an aborted error when the caller aborts mid-stream", async () => {
    const chunks = Array.from({ length: 2000 }, (_, i) => `w${i} `);
    server.enqueue({ text: chunks, chunkDelayMs: 10 });
    const controller = new AbortController();
    let received = 0;
    const run = async () => {
      for await (const event of provider.stream(request({ signal: controller.signal }))) {
        if (event.type === "text_delta" && ++received === 2) controller.abort();
      }
    };
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).kind).toBe("aborted");
    expect(received).toBeLessThan(chunks.length);
  });

  it("fails as aborted without a request when the signal already fired", async () => {
    const before = server.requests.length;
    const err = await failure(provider.stream(request({ signal: AbortSignal.abort() })));
    expect(err.kind).toBe("aborted");
    expect(server.requests.length).toBe(before);
  });

  it("gives up with a timeout when the model sends nothing within timeoutMs", async () => {
    const impatient = c.create({ id: "acme", api: c.name, baseUrl: server.baseUrl, timeoutMs: 150, models: [] });
    server.enqueue({ text: ["first", " second"], chunkDelayMs: 10_000 });
    const err = await failure(impatient.stream(request()));
    expect(err.kind).toBe("timeout");
    // a stalled model goes to the fallback chain (SPEC 16) instead of stalling again
    expect(err.retryable).toBe(false);
  });

  it("marks a tool call whose arguments were cut off as invalid, naming the tool, instead of failing the stream", async () => {
    server.enqueue({ toolCalls: [{ name: "write", arguments: ['{"path": "a.txt", "content": '] }] });
    const events = await collect(provider.stream(request()));
    const call = events.find((e) => e.type === "tool_call");
    expect(call).toMatchObject({ type: "tool_call", name: "write", arguments: {} });
    expect(call?.type === "tool_call" && call.invalid).toMatch(/"write".*not valid JSON/);
    expect(events.at(-1)?.type).toBe("done");
  });

  it("reports a refused connection as a network error naming the provider", async () => {
    const gone = await startFakeModelServer();
    const baseUrl = gone.baseUrl;
    await gone.close();
    const offline = c.create({ id: "local", api: c.name, baseUrl, models: [] });
    const err = await failure(offline.stream(request()));
    expect(err.kind).toBe("network");
    expect(err.message).toMatch(/^local: network error: /);
  });
});
