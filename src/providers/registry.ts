import type { ProviderConfig } from "../config/schema.js";
import { resolveSecretRef } from "../config/secret-ref.js";
import { isPrivateNetworkBaseUrl } from "./loopback.js";
import type { ApiKind, ModelProvider, ProviderInit, ProviderModelConfig } from "./types.js";

/**
 * Maps config.models.providers.<id> to provider instances. Provider modules (and their SDKs) are imported on first
 * use only, so a CLI run that talks to one API never loads the others.
 */

export class ModelResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModelResolutionError";
  }
}

export interface ResolvedModel {
  ref: string;
  providerId: string;
  modelId: string;
  api: ApiKind;
  model: ProviderModelConfig & { contextWindow: number; maxTokens: number };
  baseUrl?: string;
  timeoutSeconds?: number;
  /** models.providers.<id>.selfHosted, when the config says */
  selfHosted?: boolean;
}

export function splitModelRef(ref: string): { providerId: string; modelId: string } {
  const slash = ref.indexOf("/");
  if (slash <= 0 || slash === ref.length - 1) {
    throw new ModelResolutionError(`invalid model "${ref}": expected "<provider>/<model>"`);
  }
  return { providerId: ref.slice(0, slash), modelId: ref.slice(slash + 1) };
}

export function resolveModelRef(providers: Record<string, ProviderConfig>, ref: string | undefined): ResolvedModel {
  if (!ref) {
    throw new ModelResolutionError(
      "no model configured: set agents.defaults.model.primary in loopgate.json5, pass --model provider/model, or set OPENAI_API_KEY / ANTHROPIC_API_KEY",
    );
  }
  const { providerId, modelId } = splitModelRef(ref);
  const provider = providers[providerId];
  if (!provider) {
    const known = Object.keys(providers);
    throw new ModelResolutionError(
      `unknown provider "${providerId}" in model "${ref}" (configured: ${known.length ? known.join(", ") : "none"})`,
    );
  }
  const configured = provider.models.find((m) => m.id === modelId);
  const model = configured ?? { id: modelId, contextWindow: 128000, maxTokens: 8192 };
  return {
    ref,
    providerId,
    modelId,
    api: provider.api,
    model,
    baseUrl: provider.baseUrl,
    timeoutSeconds: provider.timeoutSeconds,
    ...(provider.selfHosted !== undefined ? { selfHosted: provider.selfHosted } : {}),
  };
}

export async function createProvider(id: string, config: ProviderConfig): Promise<ModelProvider> {
  const init: ProviderInit = {
    id,
    api: config.api,
    baseUrl: config.baseUrl,
    apiKey: resolveSecretRef(config.apiKey, `models.providers.${id}.apiKey`),
    timeoutMs: config.timeoutSeconds ? config.timeoutSeconds * 1000 : undefined,
    headers: config.headers,
    models: config.models,
    script: config.script,
  };
  switch (config.api) {
    case "openai-completions":
      return (await import("./openai-completions.js")).createOpenAICompletionsProvider(init);
    case "openai-responses":
      return (await import("./openai-responses.js")).createOpenAIResponsesProvider(init);
    case "anthropic-messages":
      return (await import("./anthropic-messages.js")).createAnthropicMessagesProvider(init);
    case "scripted":
      return (await import("./scripted.js")).createScriptedProvider(init);
  }
}

/** Loopback and private-network base URLs are self-hosted (slower first tokens: a longer idle window). */
export function isSelfHostedBaseUrl(baseUrl: string | undefined): boolean {
  return isPrivateNetworkBaseUrl(baseUrl);
}
