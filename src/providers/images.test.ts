/**
 * Images on the wire: each provider, through its real SDK or HTTP client, sends a user message's image and a tool
 * result's image in its API's own shape to the fake model server on loopback, which captures the JSON body.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModelServer, startFakeModelServer } from "../testing/fake-model-server.js";
import { createAnthropicMessagesProvider } from "./anthropic-messages.js";
import { acceptsImages, IMAGE_OMITTED_TEXT, textOnlyProvider } from "./image-input.js";
import { createOpenAICompletionsProvider } from "./openai-completions.js";
import { createOpenAIResponsesProvider } from "./openai-responses.js";
import { collect, lastBodyAt, requestFor } from "./test-helpers.js";
import type { ChatMessage, ProviderInit } from "./types.js";

const PNG = Buffer.from("png bytes stand-in").toString("base64");
const JPEG = Buffer.from("jpeg bytes stand-in").toString("base64");

/** A user message with an image, then a turn with two tool calls whose second result carries an image. */
const CONVERSATION: ChatMessage[] = [
  {
    role: "user",
    content: [
      { type: "text", text: "what is in this photo?" },
      { type: "image", mimeType: "image/jpeg", data: JPEG, width: 640, height: 480 },
    ],
  },
  {
    role: "assistant",
    content: [
      { type: "toolCall", id: "call_1", name: "exec", arguments: { command: "ls" } },
      { type: "toolCall", id: "call_2", name: "read", arguments: { path: "shot.png" } },
    ],
  },
  { role: "toolResult", toolCallId: "call_1", toolName: "exec", content: "shot.png", isError: false },
  {
    role: "toolResult",
    toolCallId: "call_2",
    toolName: "read",
    content: [
      { type: "text", text: "shot.png: image/png 4000×3000 → sent as 1200×900" },
      { type: "image", mimeType: "image/png", data: PNG, width: 1200, height: 900 },
    ],
    isError: false,
  },
];

const request = requestFor({ messages: CONVERSATION });

let server: FakeModelServer;
beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());

function init(api: ProviderInit["api"]): ProviderInit {
  return { id: "acme", api, baseUrl: server.baseUrl, apiKey: "sk-test", models: [] };
}

describe("images on the wire", () => {
  it("anthropic-messages: image blocks in the user content and inside tool_result content", async () => {
    await collect(createAnthropicMessagesProvider(init("anthropic-messages")).stream(request()));
    const body = lastBodyAt(server, "/v1/messages");
    const messages = body.messages as Array<{ role: string; content: unknown }>;
    expect(messages[0]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "what is in this photo?" },
        { type: "image", source: { type: "base64", media_type: "image/jpeg", data: JPEG } },
      ],
    });
    expect(messages[2]).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_1", content: "shot.png" },
        {
          type: "tool_result",
          tool_use_id: "call_2",
          content: [
            { type: "text", text: "shot.png: image/png 4000×3000 → sent as 1200×900" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
          ],
        },
      ],
    });
  });

  it("openai-responses: input_image with a data URL, in the user input and in function_call_output", async () => {
    await collect(createOpenAIResponsesProvider(init("openai-responses")).stream(request()));
    const input = lastBodyAt(server, "/v1/responses").input as Array<Record<string, unknown>>;
    expect(input[0]).toEqual({
      role: "user",
      content: [
        { type: "input_text", text: "what is in this photo?" },
        { type: "input_image", image_url: `data:image/jpeg;base64,${JPEG}`, detail: "auto" },
      ],
    });
    expect(input.filter((item) => item.type === "function_call_output")).toEqual([
      { type: "function_call_output", call_id: "call_1", output: "shot.png" },
      {
        type: "function_call_output",
        call_id: "call_2",
        output: [
          { type: "input_text", text: "shot.png: image/png 4000×3000 → sent as 1200×900" },
          { type: "input_image", image_url: `data:image/png;base64,${PNG}`, detail: "auto" },
        ],
      },
    ]);
  });

  it("openai-completions: tool messages carry text; their images follow in one user message after the last of them", async () => {
    await collect(createOpenAICompletionsProvider(init("openai-completions")).stream(request()));
    const messages = lastBodyAt(server, "/v1/chat/completions").messages as Array<Record<string, unknown>>;
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "user"]);
    expect(messages[0]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "what is in this photo?" },
        { type: "image_url", image_url: { url: `data:image/jpeg;base64,${JPEG}` } },
      ],
    });
    expect(messages[3]).toEqual({
      role: "tool",
      tool_call_id: "call_2",
      content: "shot.png: image/png 4000×3000 → sent as 1200×900\n[1 image(s) follow in the next user message]",
    });
    expect(messages[4]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "Images from tool result call_2 (read):" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    });
  });

  it("an image whose bytes were not loaded goes as a note, not as an empty image", async () => {
    const provider = createAnthropicMessagesProvider(init("anthropic-messages"));
    await collect(
      provider.stream(
        request({
          messages: [{ role: "user", content: [{ type: "image", mimeType: "image/png", blob: "ab12", bytes: 10 }] }],
        }),
      ),
    );
    const messages = lastBodyAt(server, "/v1/messages").messages as Array<{ content: unknown }>;
    expect(messages[0]?.content).toEqual([{ type: "text", text: "[image image/png not available]" }]);
  });
});

describe("models without image input", () => {
  it("follow the model entry's input key, else the API's default", () => {
    expect(acceptsImages("openai-completions", { input: ["text", "image"] })).toBe(true);
    expect(acceptsImages("anthropic-messages", { input: ["text"] })).toBe(false);
    expect(acceptsImages("anthropic-messages", {})).toBe(true);
    expect(acceptsImages("openai-responses", {})).toBe(true);
    expect(acceptsImages("openai-completions", {})).toBe(false);
  });

  it("get a note in place of each image, and the rest of the request as it was", async () => {
    const provider = textOnlyProvider(createOpenAICompletionsProvider(init("openai-completions")));
    await collect(provider.stream(request()));
    const messages = lastBodyAt(server, "/v1/chat/completions").messages as Array<Record<string, unknown>>;
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(messages[0]?.content).toEqual([
      { type: "text", text: "what is in this photo?" },
      { type: "text", text: IMAGE_OMITTED_TEXT },
    ]);
    expect(messages[3]?.content).toBe(`shot.png: image/png 4000×3000 → sent as 1200×900\n${IMAGE_OMITTED_TEXT}`);
    expect(JSON.stringify(messages)).not.toContain("base64");
  });
});
