/**
 * Reasoning as the real servers stream it: each test replays an SSE body written the way that server sends it
 * (field order, nulls, empty strings, extra fields and all) from a real HTTP server on loopback, and checks what
 * the provider yields. The fake model server covers the common shapes; these are the variants it does not emit.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createAnthropicMessagesProvider } from "./anthropic-messages.js";
import { createOpenAICompletionsProvider } from "./openai-completions.js";
import { createOpenAIResponsesProvider } from "./openai-responses.js";
import { collect, requestFor } from "./test-helpers.js";
import type { ModelStreamEvent } from "./types.js";

let server: http.Server | undefined;
afterEach(async () => {
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** Serves `body` as text/event-stream to every POST; returns the base URL ending in /v1. */
async function serveSse(body: string): Promise<string> {
  server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`;
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1760000000,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;

const thinkingOf = (events: ModelStreamEvent[]) =>
  events.filter((e) => e.type === "thinking_delta" || e.type === "thinking_end");

async function completions(body: string) {
  const baseUrl = await serveSse(body);
  const provider = createOpenAICompletionsProvider({
    id: "local",
    api: "openai-completions",
    baseUrl,
    apiKey: "x",
    models: [],
  });
  return collect(provider.stream(requestFor({ model: "m" })()));
}

describe("Chat Completions reasoning deltas", () => {
  it("Ollama / OpenRouter: `reasoning` beside an empty `content`, then the answer", async () => {
    const events = await completions(
      [
        chunk({ role: "assistant", content: "", reasoning: "Okay, the user " }),
        chunk({ role: "assistant", content: "", reasoning: "greets me." }),
        chunk({ role: "assistant", content: "Hello!" }),
        chunk({ role: "assistant", content: "" }, "stop"),
        "data: [DONE]\n\n",
      ].join(""),
    );
    expect(thinkingOf(events)).toEqual([
      { type: "thinking_delta", delta: "Okay, the user " },
      { type: "thinking_delta", delta: "greets me." },
      { type: "thinking_end", thinking: "Okay, the user greets me." },
    ]);
    expect(events.filter((e) => e.type === "text_delta")).toEqual([{ type: "text_delta", delta: "Hello!" }]);
  });

  it("DeepSeek / vLLM: `reasoning_content` with `content: null`, usage in a last chunk without choices", async () => {
    const events = await completions(
      [
        chunk({ role: "assistant", content: null, reasoning_content: "" }),
        chunk({ content: null, reasoning_content: "9.11 vs 9.8: " }),
        chunk({ content: null, reasoning_content: "compare tenths." }),
        chunk({ content: "9.8 is larger.", reasoning_content: null }),
        chunk({ content: "", reasoning_content: null }, "stop"),
        `data: ${JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion.chunk",
          created: 1760000000,
          model: "deepseek-reasoner",
          choices: [],
          usage: {
            prompt_tokens: 12,
            completion_tokens: 40,
            total_tokens: 52,
            completion_tokens_details: { reasoning_tokens: 31 },
          },
        })}\n\n`,
        "data: [DONE]\n\n",
      ].join(""),
    );
    expect(thinkingOf(events)).toEqual([
      { type: "thinking_delta", delta: "9.11 vs 9.8: " },
      { type: "thinking_delta", delta: "compare tenths." },
      { type: "thinking_end", thinking: "9.11 vs 9.8: compare tenths." },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "done", stopReason: "stop", usage: { input: 12, output: 40 } });
  });
});

describe("OpenAI Responses reasoning summaries", () => {
  it("a reasoning item with its summary, then the message: one thinking block before the answer", async () => {
    const ev = (type: string, data: Record<string, unknown>, n: number) =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, ...data })}\n\n`;
    const response = { id: "resp_1", object: "response", status: "in_progress", model: "o4-mini", output: [] };
    const reasoning = { id: "rs_1", type: "reasoning", summary: [] as unknown[] };
    const message = { id: "msg_1", type: "message", role: "assistant", status: "in_progress", content: [] };
    const body = [
      ev("response.created", { response }, 0),
      ev("response.in_progress", { response }, 1),
      ev("response.output_item.added", { output_index: 0, item: reasoning }, 2),
      ev(
        "response.reasoning_summary_part.added",
        { item_id: "rs_1", output_index: 0, summary_index: 0, part: { type: "summary_text", text: "" } },
        3,
      ),
      ev(
        "response.reasoning_summary_text.delta",
        { item_id: "rs_1", output_index: 0, summary_index: 0, delta: "**Comparing** " },
        4,
      ),
      ev(
        "response.reasoning_summary_text.delta",
        { item_id: "rs_1", output_index: 0, summary_index: 0, delta: "both." },
        5,
      ),
      ev(
        "response.reasoning_summary_text.done",
        { item_id: "rs_1", output_index: 0, summary_index: 0, text: "**Comparing** both." },
        6,
      ),
      ev(
        "response.reasoning_summary_part.done",
        {
          item_id: "rs_1",
          output_index: 0,
          summary_index: 0,
          part: { type: "summary_text", text: "**Comparing** both." },
        },
        7,
      ),
      ev(
        "response.output_item.done",
        {
          output_index: 0,
          item: { ...reasoning, summary: [{ type: "summary_text", text: "**Comparing** both." }] },
        },
        8,
      ),
      ev("response.output_item.added", { output_index: 1, item: message }, 9),
      ev(
        "response.content_part.added",
        {
          item_id: "msg_1",
          output_index: 1,
          content_index: 0,
          part: { type: "output_text", text: "", annotations: [] },
        },
        10,
      ),
      ev(
        "response.output_text.delta",
        { item_id: "msg_1", output_index: 1, content_index: 0, delta: "Both match.", logprobs: [] },
        11,
      ),
      ev(
        "response.output_text.done",
        { item_id: "msg_1", output_index: 1, content_index: 0, text: "Both match.", logprobs: [] },
        12,
      ),
      ev(
        "response.output_item.done",
        {
          output_index: 1,
          item: {
            ...message,
            status: "completed",
            content: [{ type: "output_text", text: "Both match.", annotations: [] }],
          },
        },
        13,
      ),
      ev(
        "response.completed",
        {
          response: {
            ...response,
            status: "completed",
            usage: {
              input_tokens: 20,
              input_tokens_details: { cached_tokens: 0 },
              output_tokens: 30,
              output_tokens_details: { reasoning_tokens: 22 },
              total_tokens: 50,
            },
          },
        },
        14,
      ),
    ].join("");
    const baseUrl = await serveSse(body);
    const provider = createOpenAIResponsesProvider({
      id: "openai",
      api: "openai-responses",
      baseUrl,
      apiKey: "x",
      models: [],
    });
    const events = await collect(provider.stream(requestFor({ model: "o4-mini", thinking: "low" })()));
    expect(thinkingOf(events)).toEqual([
      { type: "thinking_delta", delta: "**Comparing** " },
      { type: "thinking_delta", delta: "both." },
      { type: "thinking_end", thinking: "**Comparing** both." },
    ]);
    const kinds = events.map((e) => e.type);
    expect(kinds.indexOf("thinking_end")).toBeLessThan(kinds.indexOf("text_delta"));
  });
});

describe("Anthropic thinking blocks", () => {
  it("thinking deltas, then the signature in its own delta: the block ends with the whole signature", async () => {
    const ev = (type: string, data: Record<string, unknown>) =>
      `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const body = [
      ev("message_start", {
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "claude-test",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 25, output_tokens: 1 },
        },
      }),
      ev("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
      ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: "Let me analyze " } }),
      ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: "this." } }),
      ev("content_block_delta", {
        index: 0,
        delta: { type: "signature_delta", signature: "EqQBCgIYAhIM1gbcDa9GJwZA" },
      }),
      ev("content_block_stop", { index: 0 }),
      ev("content_block_start", { index: 1, content_block: { type: "text", text: "" } }),
      ev("content_block_delta", { index: 1, delta: { type: "text_delta", text: "Done." } }),
      ev("content_block_stop", { index: 1 }),
      ev("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 40 } }),
      ev("message_stop", {}),
    ].join("");
    const baseUrl = await serveSse(body);
    const provider = createAnthropicMessagesProvider({
      id: "anthropic",
      api: "anthropic-messages",
      baseUrl,
      apiKey: "x",
      models: [],
    });
    const events = await collect(provider.stream(requestFor({ model: "claude-test", thinking: "low" })()));
    expect(thinkingOf(events)).toEqual([
      { type: "thinking_delta", delta: "Let me analyze " },
      { type: "thinking_delta", delta: "this." },
      { type: "thinking_end", thinking: "Let me analyze this.", signature: "EqQBCgIYAhIM1gbcDa9GJwZA" },
    ]);
  });
});
