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
import type { ChosenKey, RunCredentials } from "./run-credentials.js";

export function withAuthProfiles(provider: ModelProvider, credentials: RunCredentials | undefined): ModelProvider {
  if (!credentials || provider.api === "scripted" || !credentials.covers(provider.id)) return provider;
  return { id: provider.id, api: provider.api, stream: (request) => keyedStream(provider, credentials, request) };
}

/**
 * A plain async iterator, not an async generator: every event of every model call passes here, and a generator layer
 * cost each one a promise and a hop more (providers/stream-tap.ts says why). `return()` closes the stream of the
 * profile in use.
 */
function keyedStream(
  provider: ModelProvider,
  credentials: RunCredentials,
  request: ModelRequest,
): AsyncIterable<ModelStreamEvent> {
  const tried = new Set<string>();
  let chosen: ChosenKey | undefined;
  let inner: AsyncIterator<ModelStreamEvent> | undefined;
  /** whether the stream of the profile in use gave an event: no rotation after that */
  let streamed = false;
  let over = false;
  const open = () => {
    streamed = false;
    // a provider without profiles (no apiKey, no auth.profiles): the provider's own configuration applies
    const keyed = chosen ? { ...request, apiKey: chosen.apiKey, apiKeyMode: chosen.mode } : request;
    inner = provider.stream(keyed)[Symbol.asyncIterator]();
  };
  const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
  // an event costs one `then`: the async work (choosing a key, rotating) is only at the start and after a failure
  const pull = (): Promise<IteratorResult<ModelStreamEvent>> =>
    (inner as AsyncIterator<ModelStreamEvent>).next().then(onResult, onError);
  const onResult = (result: IteratorResult<ModelStreamEvent>): IteratorResult<ModelStreamEvent> => {
    if (result.done) {
      over = true;
      return done;
    }
    streamed = true;
    if (chosen && result.value.type === "done") credentials.succeeded(chosen.profileId, request.model);
    return result;
  };
  const onError = async (err: unknown): Promise<IteratorResult<ModelStreamEvent>> => {
    try {
      if (!chosen || !(err instanceof ProviderError)) throw err;
      const reason = await credentials.failed(chosen.profileId, request.model, err);
      if (reason === undefined || streamed || request.signal.aborted) throw err;
      tried.add(chosen.profileId);
      const next = await credentials.choose(provider.id, request.model, tried);
      if (!next) throw err;
      chosen = next;
      open();
    } catch (failure) {
      over = true;
      throw failure;
    }
    return pull();
  };
  const iterator: AsyncIterableIterator<ModelStreamEvent> = {
    next() {
      if (over) return Promise.resolve(done);
      if (inner) return pull();
      return credentials.choose(provider.id, request.model, tried).then(
        (key) => {
          chosen = key;
          open();
          return pull();
        },
        (err) => {
          over = true;
          throw err;
        },
      );
    },
    async return() {
      if (over) return done;
      over = true;
      await inner?.return?.();
      return done;
    },
    async throw(err?: unknown) {
      if (!over) {
        over = true;
        await inner?.return?.();
      }
      throw err;
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
