/**
 * The provider decorator that puts an auth profile's key on every model call (SPEC 23) and rotates inside the call:
 * a rate limit, billing or auth failure on one profile, before the model streamed anything, sends the same request
 * again at once on the next usable profile of the provider, with no backoff sleep. When no other profile is usable
 * (or output was already streamed) the failure goes on unchanged, to the run's retry policy (model-retry.ts: its
 * backoff, and its buffer reset on `retry`) and then to model fallback. Nothing is streamed twice: a rotation
 * happens only before the first event reached the caller.
 */
import type { ModelProvider, ModelRequest, ModelStreamEvent } from "../providers/types.js";
import { ProviderError } from "../providers/types.js";
import type { RunCredentials } from "./run-credentials.js";

export function withAuthProfiles(provider: ModelProvider, credentials: RunCredentials | undefined): ModelProvider {
  if (!credentials || provider.api === "scripted" || !credentials.covers(provider.id)) return provider;
  return { id: provider.id, api: provider.api, stream: (request) => keyedStream(provider, credentials, request) };
}

async function* keyedStream(
  provider: ModelProvider,
  credentials: RunCredentials,
  request: ModelRequest,
): AsyncGenerator<ModelStreamEvent> {
  const tried = new Set<string>();
  let chosen = await credentials.choose(provider.id, request.model, tried);
  // a provider without profiles (no apiKey, no auth.profiles): the provider's own configuration applies
  if (!chosen) {
    yield* provider.stream(request);
    return;
  }
  while (true) {
    let streamed = false;
    try {
      for await (const event of provider.stream({ ...request, apiKey: chosen.apiKey, apiKeyMode: chosen.mode })) {
        streamed = true;
        if (event.type === "done") credentials.succeeded(chosen.profileId, request.model);
        yield event;
      }
      return;
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      const reason = await credentials.failed(chosen.profileId, request.model, err);
      if (reason === undefined || streamed || request.signal.aborted) throw err;
      tried.add(chosen.profileId);
      const next = await credentials.choose(provider.id, request.model, tried);
      if (!next) throw err;
      chosen = next;
    }
  }
}
