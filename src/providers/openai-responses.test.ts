import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModelServer, startFakeModelServer } from "../testing/fake-model-server.js";
import { createOpenAIResponsesProvider } from "./openai-responses.js";
import { collect, lastBodyAt, requestFor } from "./test-helpers.js";
import type { ModelProvider } from "./types.js";

let server: FakeModelServer;
let provider: ModelProvider;

beforeAll(async () => {
  server = await startFakeModelServer();
  provider = createOpenAIResponsesProvider({
    id: "openai",
    api: "openai-responses",
    baseUrl: server.baseUrl,
    apiKey: "sk-test",
    models: [],
  });
});
afterAll(() => server.close());

const request = requestFor({ model: "gpt-4.1" });

function lastBody(): Record<string, unknown> {
  return lastBodyAt(server, "/v1/responses");
}

describe("openai-responses request", () => {
  it("sends the system prompt as instructions and the tool exchange as function_call items, storing nothing", async () => {
    await collect(
      provider.stream(
        request({
          system: "You are Loopgate.",
          messages: [
            { role: "user", content: "List the files." },
            {
              role: "assistant",
              content: [
                { type: "thinking", thinking: "ls will do" },
                { type: "text", text: "Running ls." },
                { type: "toolCall", id: "call_7", name: "exec", arguments: { command: "ls" } },
              ],
            },
            { role: "toolResult", toolCallId: "call_7", toolName: "exec", content: "a.txt\nb.txt", isError: false },
            { role: "assistant", content: [{ type: "text", text: "Two files." }] },
            { role: "user", content: "Thanks" },
          ],
          tools: [
            {
              name: "exec",
              description: "Run a command",
              parameters: { type: "object", properties: { command: { type: "string" } } },
            },
          ],
          maxTokens: 300,
        }),
      ),
    );
    const body = lastBody();
    expect(body).toMatchObject({ model: "gpt-4.1", instructions: "You are Loopgate.", stream: true, store: false });
    expect(body.max_output_tokens).toBe(300);
    expect(body.input).toEqual([
      { role: "user", content: "List the files." },
      { role: "assistant", content: "Running ls." },
      { type: "function_call", call_id: "call_7", name: "exec", arguments: '{"command":"ls"}' },
      { type: "function_call_output", call_id: "call_7", output: "a.txt\nb.txt" },
      { role: "assistant", content: "Two files." },
      { role: "user", content: "Thanks" },
    ]);
    expect(body.tools).toEqual([
      {
        type: "function",
        name: "exec",
        description: "Run a command",
        parameters: { type: "object", properties: { command: { type: "string" } } },
        strict: false,
      },
    ]);
  });

  it("asks reasoning models for a reasoning summary only when thinking is on", async () => {
    await collect(provider.stream(request({ model: "gpt-5-mini", thinking: "low" })));
    expect(lastBody().reasoning).toEqual({ effort: "low", summary: "auto" });

    await collect(provider.stream(request({ model: "gpt-5-mini", thinking: "off" })));
    expect(lastBody()).not.toHaveProperty("reasoning");
  });
});

describe("openai-responses stream", () => {
  it("streams the reasoning summary as thinking before the answer", async () => {
    server.enqueue({ thinking: ["Compare ", "both."], text: ["Both ", "match."] });
    const events = await collect(provider.stream(request({ model: "o4-mini", thinking: "medium" })));
    expect(events.filter((e) => e.type !== "done")).toEqual([
      { type: "thinking_delta", delta: "Compare " },
      { type: "thinking_delta", delta: "both." },
      { type: "thinking_end", thinking: "Compare both." },
      { type: "text_delta", delta: "Both " },
      { type: "text_delta", delta: "match." },
    ]);
  });

  it("uses the call_id (not the item id) as the tool call id, so the output can be matched to it", async () => {
    server.enqueue({ toolCalls: [{ id: "call_abc", name: "read", arguments: { path: "x" } }] });
    const events = await collect(provider.stream(request()));
    expect(events).toContainEqual({ type: "tool_call", id: "call_abc", name: "read", arguments: { path: "x" } });
  });
});
