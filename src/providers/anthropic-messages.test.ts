import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anthropicErrorTurn,
  type FakeModelServer,
  requestApiKey,
  startFakeModelServer,
} from "../testing/fake-model-server.js";
import { createAnthropicMessagesProvider } from "./anthropic-messages.js";
import { collect, lastBodyAt, requestFor } from "./test-helpers.js";
import { type ModelProvider, ProviderError } from "./types.js";

let server: FakeModelServer;
let provider: ModelProvider;

beforeAll(async () => {
  server = await startFakeModelServer();
  provider = createAnthropicMessagesProvider({
    id: "anthropic",
    api: "anthropic-messages",
    baseUrl: server.baseUrl,
    apiKey: "sk-ant-test",
    models: [{ id: "claude-big", maxTokens: 32000 }],
  });
});
afterAll(() => server.close());

const request = requestFor({ model: "claude-test" });

function lastBody(): Record<string, unknown> {
  return lastBodyAt(server, "/v1/messages");
}

describe("anthropic-messages request", () => {
  it("an auth profile's key, as an API key or in token mode (the SDK's authToken), is the call's bearer credential", async () => {
    server.enqueue({ text: "a" }, { text: "b" });
    await collect(provider.stream(request({ apiKey: "sk-ant-profile-key" })));
    expect(requestApiKey(server.requests.at(-1)!)).toBe("sk-ant-profile-key");
    await collect(provider.stream(request({ apiKey: "sk-ant-oat-profile-token", apiKeyMode: "token" })));
    expect(server.requests.at(-1)!.headers.authorization).toBe("Bearer sk-ant-oat-profile-token");
  });

  it("sends the system prompt, signed thinking, tool_use and merged tool results in Messages form", async () => {
    await collect(
      provider.stream(
        request({
          system: "You are Loopgate.",
          messages: [
            { role: "user", content: "Read a and b" },
            {
              role: "assistant",
              content: [
                { type: "thinking", thinking: "Two reads.", signature: "sig-1" },
                { type: "text", text: "Reading." },
                { type: "toolCall", id: "toolu_a", name: "read", arguments: { path: "a" } },
                { type: "toolCall", id: "toolu_b", name: "read", arguments: { path: "b" } },
              ],
            },
            { role: "toolResult", toolCallId: "toolu_a", toolName: "read", content: "AAA", isError: false },
            { role: "toolResult", toolCallId: "toolu_b", toolName: "read", content: "ENOENT: b", isError: true },
          ],
          tools: [
            {
              name: "read",
              description: "Read a file",
              parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
            },
          ],
        }),
      ),
    );
    const body = lastBody();
    expect(body.system).toBe("You are Loopgate.");
    expect(body.messages).toEqual([
      { role: "user", content: "Read a and b" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Two reads.", signature: "sig-1" },
          { type: "text", text: "Reading." },
          { type: "tool_use", id: "toolu_a", name: "read", input: { path: "a" } },
          { type: "tool_use", id: "toolu_b", name: "read", input: { path: "b" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_a", content: "AAA" },
          { type: "tool_result", tool_use_id: "toolu_b", content: "ENOENT: b", is_error: true },
        ],
      },
    ]);
    expect(body.tools).toEqual([
      {
        name: "read",
        description: "Read a file",
        input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      },
    ]);
    expect(body).toMatchObject({ max_tokens: 4096, stream: true });
    expect(body).not.toHaveProperty("thinking");
  });

  it("takes max_tokens from the model's config", async () => {
    await collect(provider.stream(request({ model: "claude-big" })));
    expect(lastBody().max_tokens).toBe(32000);
  });

  it("enables thinking with the level's budget and raises max_tokens above it", async () => {
    await collect(provider.stream(request({ thinking: "medium" })));
    const body = lastBody();
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 8192 });
    expect(body.max_tokens as number).toBeGreaterThan(8192);
  });

  it("openclaw-thinking-xhigh-and-adaptive-reach-the-wire: xhigh is the largest budget, adaptive the middle one", async () => {
    await collect(provider.stream(request({ thinking: "xhigh" })));
    expect(lastBody().thinking).toEqual({ type: "enabled", budget_tokens: 32768 });
    await collect(provider.stream(request({ thinking: "adaptive" })));
    expect(lastBody().thinking).toEqual({ type: "enabled", budget_tokens: 8192 });
  });

  it("sends the configured API key with the request", async () => {
    await collect(provider.stream(request()));
    // SDK 1.x sends the key as a bearer token; older ones used x-api-key
    const headers = server.requests.at(-1)?.headers ?? {};
    expect(headers.authorization ?? headers["x-api-key"]).toContain("sk-ant-test");
  });
});

describe("anthropic-messages stream", () => {
  it("streams thinking as thinking_delta and keeps the block's signature", async () => {
    server.enqueue({ thinking: ["Let me ", "check."], thinkingSignature: "EqQBCkgIARABGAIiQL", text: "Done." });
    const events = await collect(provider.stream(request({ thinking: "low" })));
    expect(events.filter((e) => e.type !== "done")).toEqual([
      { type: "thinking_delta", delta: "Let me " },
      { type: "thinking_delta", delta: "check." },
      { type: "thinking_end", thinking: "Let me check.", signature: "EqQBCkgIARABGAIiQL" },
      { type: "text_delta", delta: "Done." },
    ]);
  });

  it("counts prompt-cache reads announced in message_start", async () => {
    const custom = await startFakeModelServer();
    try {
      const p = createAnthropicMessagesProvider({
        id: "a",
        api: "anthropic-messages",
        baseUrl: custom.baseUrl,
        models: [],
      });
      custom.enqueue({ text: "x", usage: { input: 5, output: 3, cacheRead: 100 } });
      const events = await collect(p.stream(request()));
      expect(events.at(-1)).toMatchObject({ type: "done", usage: { input: 5, output: 3, cacheRead: 100, total: 108 } });
    } finally {
      await custom.close();
    }
  });

  it("treats 529 overloaded_error as a retryable server error", async () => {
    server.enqueue(anthropicErrorTurn(529, "overloaded_error", "Overloaded"));
    const err = await collect(provider.stream(request())).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ kind: "server", retryable: true, message: "anthropic: 529 server error: Overloaded" });
  });

  it("accepts a base URL with or without the /v1 suffix", async () => {
    const bare = createAnthropicMessagesProvider({
      id: "anthropic",
      api: "anthropic-messages",
      baseUrl: `http://127.0.0.1:${server.port}`,
      models: [],
    });
    server.enqueue({ text: "hi there" });
    const events = await collect(bare.stream(request()));
    expect(events).toContainEqual({ type: "text_delta", delta: "hi there" });
  });
});
