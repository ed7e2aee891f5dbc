import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cadence } from "../infra/cadence.js";
import { systemClock } from "../infra/clock.js";
import { type FakeModelServer, startFakeModelServer } from "../testing/fake-model-server.js";
import { createOpenAICompletionsProvider, requestBody } from "./openai-completions.js";
import { collect, lastBodyAt, requestFor } from "./test-helpers.js";
import type { ModelProvider, ModelRequest } from "./types.js";

let server: FakeModelServer;
let provider: ModelProvider;

beforeAll(async () => {
  server = await startFakeModelServer();
  provider = createOpenAICompletionsProvider({
    id: "openai",
    api: "openai-completions",
    baseUrl: server.baseUrl,
    apiKey: "sk-test",
    models: [],
  });
});
afterAll(() => server.close());

const request = requestFor({ model: "gpt-4o-mini" });

function lastBody(): Record<string, unknown> {
  return lastBodyAt(server, "/v1/chat/completions");
}

describe("openai-completions request", () => {
  it("sends the system prompt, the tool exchange and the tools in Chat Completions form", async () => {
    await collect(
      provider.stream(
        request({
          system: "You are Loopgate.",
          messages: [
            { role: "user", content: "What is in a.txt?" },
            {
              role: "assistant",
              content: [
                { type: "thinking", thinking: "I should read it." },
                { type: "text", text: "Let me look." },
                { type: "toolCall", id: "call_9", name: "read", arguments: { path: "a.txt" } },
              ],
            },
            { role: "toolResult", toolCallId: "call_9", toolName: "read", content: "hello", isError: false },
          ],
          tools: [
            {
              name: "read",
              description: "Read a file",
              parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
            },
          ],
          maxTokens: 512,
        }),
      ),
    );
    const body = lastBody();
    expect(body.messages).toEqual([
      { role: "system", content: "You are Loopgate." },
      { role: "user", content: "What is in a.txt?" },
      {
        role: "assistant",
        content: "Let me look.",
        tool_calls: [{ id: "call_9", type: "function", function: { name: "read", arguments: '{"path":"a.txt"}' } }],
      },
      { role: "tool", tool_call_id: "call_9", content: "hello" },
    ]);
    expect(body.tools).toEqual([
      {
        type: "function",
        function: {
          name: "read",
          description: "Read a file",
          parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
        },
      },
    ]);
    expect(body).toMatchObject({
      model: "gpt-4o-mini",
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 512,
    });
  });

  it("leaves tools out entirely when the agent has none", async () => {
    await collect(provider.stream(request()));
    expect(lastBody()).not.toHaveProperty("tools");
  });

  it("asks reasoning models for reasoning effort and leaves other models alone", async () => {
    await collect(provider.stream(request({ model: "o3-mini", thinking: "high", maxTokens: 1000 })));
    expect(lastBody()).toMatchObject({ reasoning_effort: "high", max_completion_tokens: 1000 });
    expect(lastBody()).not.toHaveProperty("max_tokens");

    await collect(provider.stream(request({ model: "llama3.1:8b", thinking: "high" })));
    expect(lastBody()).not.toHaveProperty("reasoning_effort");
  });

  it("openclaw-thinking-xhigh-and-adaptive-reach-the-wire: xhigh asks for high effort, adaptive leaves it to the model", async () => {
    await collect(provider.stream(request({ model: "o3-mini", thinking: "xhigh" })));
    expect(lastBody()).toMatchObject({ reasoning_effort: "high" });
    await collect(provider.stream(request({ model: "o3-mini", thinking: "adaptive" })));
    expect(lastBody()).not.toHaveProperty("reasoning_effort");
  });

  it("works against a server that needs no API key (Ollama, vLLM, llama.cpp)", async () => {
    const local = createOpenAICompletionsProvider({
      id: "local",
      api: "openai-completions",
      baseUrl: server.baseUrl,
      models: [],
    });
    server.enqueue({ text: "local answer" });
    const events = await collect(local.stream(request()));
    expect(events).toContainEqual({ type: "text_delta", delta: "local answer" });
    // no key, no Authorization header (the SDK this provider used to be built on needed a placeholder key, "none")
    expect(server.requests.at(-1)?.headers.authorization).toBeUndefined();
  });
});

describe("openai-completions stream", () => {
  it("streams reasoning_content as thinking and closes the block before the answer", async () => {
    server.enqueue({ thinking: ["Two plus ", "two..."], text: "4" });
    const events = await collect(provider.stream(request({ model: "deepseek-reasoner" })));
    expect(events.slice(0, 4)).toEqual([
      { type: "thinking_delta", delta: "Two plus " },
      { type: "thinking_delta", delta: "two..." },
      { type: "thinking_end", thinking: "Two plus two..." },
      { type: "text_delta", delta: "4" },
    ]);
  });

  it("gives a tool call without an id one, so its result can be paired with it", async () => {
    const raw = await startFakeModelServer({
      respond: () => ({ toolCalls: [{ id: "", name: "exec", arguments: { command: "pwd" } }] }),
    });
    try {
      const p = createOpenAICompletionsProvider({
        id: "local",
        api: "openai-completions",
        baseUrl: raw.baseUrl,
        models: [],
      });
      const events = await collect(p.stream(request()));
      const call = events.find((e) => e.type === "tool_call");
      expect(call).toMatchObject({ name: "exec", arguments: { command: "pwd" } });
      expect(call?.type === "tool_call" && call.id.length > 0).toBe(true);
    } finally {
      await raw.close();
    }
  });
});

describe("openai-completions on the stream beat", () => {
  // the run's beat rides on each request (run/attempt.ts puts it there)
  const onBeat = (req: ModelRequest): ModelRequest => ({ ...req, streamBeat: new Cadence(systemClock, 40).lane("r") });

  it("text that arrives within one beat goes on as one delta, and the deltas joined are the whole answer", async () => {
    server.enqueue({ text: ["The ", "answer ", "is ", "42", "."] });
    const events = await collect(provider.stream(onBeat(request())));
    const deltas = events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : []));
    expect(deltas.join("")).toBe("The answer is 42.");
    // written back to back: the first chunk at once, the rest together at the next beat
    expect(deltas.length).toBeLessThan(5);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "stop" });
  });

  it("regression: text held for the beat is delivered before an error the server sends in the stream", async () => {
    server.enqueue({
      text: ["Partial ", "answer"],
      streamError: { code: "context_length_exceeded", message: "maximum context length exceeded" },
    });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of provider.stream(onBeat(request()))) if (e.type === "text_delta") seen.push(e.delta);
    })();
    await expect(reading).rejects.toMatchObject({ kind: "context_length" });
    expect(seen.join("")).toBe("Partial answer");
  });
});

describe("openai-completions: a reader that stops early", () => {
  let raw: Server | undefined;
  afterAll(() => raw?.close());

  it("closes the connection to the model and is done from then on", async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((r) => {
      closed = r;
    });
    raw = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // the first delta, then a body that stays open: only the reader leaving can end it
      res.write('data: {"choices":[{"index":0,"delta":{"content":"first"},"finish_reason":null}]}\n\n');
      res.on("close", closed);
    });
    await new Promise<void>((r) => raw?.listen(0, "127.0.0.1", r));
    const model = createOpenAICompletionsProvider({
      id: "openai",
      api: "openai-completions",
      baseUrl: `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`,
      apiKey: "sk-test",
      models: [],
    });
    const stream = model.stream(request())[Symbol.asyncIterator]();
    expect(await stream.next()).toEqual({ done: false, value: { type: "text_delta", delta: "first" } });
    expect(await stream.return?.()).toEqual({ done: true, value: undefined });
    await serverSawClose;
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it("a reader that stops after the text sent before a stream error is done, not failed", async () => {
    const errorServer = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // one read: text held for the beat, then the error, so the text is handed on first and the error waits
      res.end(
        'data: {"choices":[{"index":0,"delta":{"content":"Partial"},"finish_reason":null}]}\n\n' +
          'data: {"error":{"message":"overloaded","type":"server_error"}}\n\n',
      );
    });
    await new Promise<void>((r) => errorServer.listen(0, "127.0.0.1", r));
    try {
      const model = createOpenAICompletionsProvider({
        id: "openai",
        api: "openai-completions",
        baseUrl: `http://127.0.0.1:${(errorServer.address() as AddressInfo).port}/v1`,
        models: [],
      });
      const beat = new Cadence(systemClock, 40).lane("r");
      const stream = model.stream({ ...request(), streamBeat: beat })[Symbol.asyncIterator]();
      expect(await stream.next()).toEqual({ done: false, value: { type: "text_delta", delta: "Partial" } });
      expect(await stream.return?.()).toEqual({ done: true, value: undefined });
      expect(await stream.next()).toEqual({ done: true, value: undefined });
    } finally {
      errorServer.close();
    }
  });
});

describe("openai-completions request body", () => {
  const PNG = "iVBORw0KGgo=";
  const readTool = {
    name: "read",
    description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  };
  const shellTool = {
    name: "shell",
    description: "Run a command",
    parameters: { type: "object", properties: { cmd: { type: "string", description: 'a "quoted" \u2028 line' } } },
  };

  it("is exactly JSON.stringify of the params for a call with tools, images, max tokens and reasoning effort", () => {
    const req = request({
      model: "o3-mini",
      system: "You are Loopgate.",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image", mimeType: "image/png", data: PNG },
          ],
        },
      ],
      tools: [readTool, shellTool],
      maxTokens: 512,
      thinking: "high",
    });
    const expected = {
      model: "o3-mini",
      messages: [
        { role: "system", content: "You are Loopgate." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
          ],
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [readTool, shellTool].map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })),
      max_completion_tokens: 512,
      reasoning_effort: "high",
    };
    // twice: the second body is built from the cached tool JSON
    expect(requestBody(req)).toBe(JSON.stringify(expected));
    expect(requestBody(req)).toBe(JSON.stringify(expected));
  });

  it("is exactly JSON.stringify of the params without tools, with max_tokens for a non-reasoning model", () => {
    const req = request({ model: "gpt-4o-mini", maxTokens: 100, thinking: "high" });
    const expected = {
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 100,
    };
    expect(requestBody(req)).toBe(JSON.stringify(expected));
  });

  it("a tool renamed or redescribed over the same schema object is sent with its new name and description", () => {
    const parameters = { type: "object", properties: {} };
    requestBody(request({ tools: [{ name: "a", description: "first", parameters }] }));
    const body = JSON.parse(requestBody(request({ tools: [{ name: "b", description: "second", parameters }] })));
    expect(body.tools).toEqual([{ type: "function", function: { name: "b", description: "second", parameters } }]);
  });
});
