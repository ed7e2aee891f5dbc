/**
 * Which models get images, and what the others get instead. A model entry says it with OpenClaw's capability key
 * `input: ["text", "image"]`. Without the key the wire API decides: the Anthropic Messages and OpenAI Responses
 * APIs serve model families that all read images (Claude 3+, GPT-4o and later), so their models get them; a Chat
 * Completions endpoint is as often a local text-only model (vLLM, Ollama, llama.cpp) that would answer a 400 to an
 * `image_url` part, so its models get text unless their entry lists "image".
 */
import type {
  ApiKind,
  ChatMessage,
  MessageContent,
  ModelProvider,
  ModelRequest,
  ProviderModelConfig,
} from "./types.js";

export type InputKind = "text" | "image";

export const IMAGE_OMITTED_TEXT = "[image omitted: model does not accept images]";

const IMAGES_BY_DEFAULT: Record<ApiKind, boolean> = {
  "anthropic-messages": true,
  "openai-responses": true,
  "openai-completions": false,
  scripted: true,
};

export function acceptsImages(api: ApiKind, model: Pick<ProviderModelConfig, "input">): boolean {
  return model.input ? model.input.includes("image") : IMAGES_BY_DEFAULT[api];
}

/** The content with every image part replaced by the omitted note (text parts and their order kept). */
export function withoutImages(content: MessageContent): MessageContent {
  if (typeof content === "string" || !content.some((p) => p.type === "image")) return content;
  return content.map((part) => (part.type === "image" ? { type: "text", text: IMAGE_OMITTED_TEXT } : part));
}

function stripImages(messages: ChatMessage[]): ChatMessage[] {
  return messages.map((m) => {
    if (m.role === "assistant") return m;
    const content = withoutImages(m.content);
    return content === m.content ? m : { ...m, content };
  });
}

/**
 * `provider` as seen by a model that takes text only: each request goes out with its images replaced by a note.
 * Only the request is rewritten; the transcript keeps the images, so a fallback model that reads images, or a later
 * run on one, still gets them.
 */
export function textOnlyProvider(provider: ModelProvider): ModelProvider {
  return {
    id: provider.id,
    api: provider.api,
    stream: (request: ModelRequest) => provider.stream({ ...request, messages: stripImages(request.messages) }),
  };
}
