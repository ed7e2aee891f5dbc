/**
 * Model retries and fallback through the real providers, over real HTTP on loopback against the fake model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAnthropicMessagesProvider } from "../../providers/anthropic-messages.js";
import { createOpenAICompletionsProvider } from "../../providers/openai-completions.js";
import { type ModelProvider, ProviderError } from "../../providers/types.js";
import { type FakeModelServer, openAIErrorTurn, startFakeModelServer } from "../../testing/fake-model-server.js";
import { type FallbackNotice, runWithFallback } from "./fallback.js";
import { type RetryNotice, retryDecision, withModelRetries } from "./model-retry.js";

let server: FakeModelServer;
let closedBaseUrl: string;

beforeAll(async () => {
  server = await startFakeModelServer();
  const gone = await startFakeModelServer();
  closedBaseUrl = gone.baseUrl;
  await gone.close();
});
afterAll(() => server.close());

/** One model call: the whole streamed answer as text. */
async function ask(provider: ModelProvider, model: string, signal: AbortSignal): Promise<string> {
  let text = "";
  const stream = provider.stream({ model, messages: [{ role: "user", content: "hi" }], tools: [], signal });
  for await (const event of stream) if (event.type === "text_delta") text += event.delta;
  return text;
}

describe("model retries over HTTP", () => {
  it("waits out a 429 with Retry-After: 1 and then answers, with one retry and two requests", async () => {
    const provider = createOpenAICompletionsProvider({
      id: "openai",
      api: "openai-completions",
      baseUrl: server.baseUrl,
      models: [],
    });
    const before = server.requests.length;
    server.enqueue(openAIErrorTurn(429, "Rate limit reached", "rate_limit_exceeded", { "retry-after": "1" }), {
      text: "answered after the wait",
    });
    const signal = new AbortController().signal;
    const retries: Array<Omit<RetryNotice, "error">> = [];
    const started = performance.now();

    const answer = await withModelRetries({
      call: () => ask(provider, "gpt-test", signal),
      policy: { attempts: 3, baseMs: 500, maxMs: 30_000 },
      signal,
      onRetry: ({ attempt, delayMs, reason }) => {
        retries.push({ attempt, delayMs, reason });
      },
    });

    expect(answer).toBe("answered after the wait");
    expect(retries).toEqual([{ attempt: 1, delayMs: 1000, reason: "rate_limit" }]);
    expect(server.requests.length - before).toBe(2);
    // the wait really happened (a lower bound only: a slow machine can take longer, never shorter)
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
  });
});

describe("model fallback over HTTP", () => {
  it("answers with the fallback, across wire APIs, when the primary refuses connections, and names it", async () => {
    const providers: Record<string, ModelProvider> = {
      offline: createOpenAICompletionsProvider({
        id: "offline",
        api: "openai-completions",
        baseUrl: closedBaseUrl,
        models: [],
      }),
      fake: createAnthropicMessagesProvider({
        id: "fake",
        api: "anthropic-messages",
        baseUrl: server.baseUrl,
        models: [],
      }),
    };
    server.enqueue({ text: ["Hello from ", "the fallback."] });
    const signal = new AbortController().signal;
    const retried: string[] = [];
    const fallbacks: Array<Omit<FallbackNotice, "error">> = [];
    const firstFailures: unknown[] = [];

    const out = await runWithFallback({
      chain: ["offline/gpt-test", "fake/claude-test"],
      signal,
      attempt: (ref) => {
        const [providerId, model] = ref.split("/");
        return withModelRetries({
          call: () =>
            ask(providers[providerId], model, signal).catch((err: unknown) => {
              firstFailures.push(err);
              throw err;
            }),
          policy: { attempts: 2, baseMs: 500, maxMs: 30_000 },
          signal,
          onRetry: ({ attempt, reason }) => {
            retried.push(`${ref} #${attempt} ${reason}`);
          },
          // the backoff itself is covered by the unit tests; here only the decisions matter
          sleep: async () => {},
        });
      },
      onFallback: ({ from, to, reason }) => {
        fallbacks.push({ from, to, reason });
      },
    });

    expect(out).toEqual({ result: "Hello from the fallback.", model: "fake/claude-test" });
    const refused = firstFailures[0];
    expect(refused).toBeInstanceOf(ProviderError);
    expect(refused).toMatchObject({ kind: "network", retryable: true, afterOutput: false });
    expect(retryDecision(refused, 1, { attempts: 2, baseMs: 500, maxMs: 30_000 }, () => 0)).toMatchObject({
      retry: true,
      reason: "network",
    });
    expect(retried).toEqual(["offline/gpt-test #1 network", "offline/gpt-test #2 network"]);
    expect(fallbacks).toEqual([{ from: "offline/gpt-test", to: "fake/claude-test", reason: "network" }]);
    expect(server.requests.at(-1)?.path).toBe("/v1/messages");
  });
});
