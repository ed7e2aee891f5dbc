import { describe, expect, it } from "vitest";
import { closableModel, modelRequest, readFirstThenStop } from "../providers/early-stop.test-support.js";
import { type ModelProvider, type ModelRequest, type ModelStreamEvent, ProviderError } from "../providers/types.js";
import { withAuthProfiles } from "./keyed-provider.js";
import type { ChosenKey, RunCredentials } from "./run-credentials.js";

/**
 * The auth-profile decorator over a model: what the run's chooser is told (a stand-in for RunCredentials with its
 * profiles in order; a rate limit is the key's fault, as authFailureReason says) and what reaches the model.
 */
function credentials(profiles: string[]) {
  const told: string[] = [];
  const stub = {
    covers: () => true,
    async choose(_provider: string, _model: string, tried: ReadonlySet<string>): Promise<ChosenKey | undefined> {
      const id = profiles.find((p) => !tried.has(p));
      return id === undefined ? undefined : { profileId: id, apiKey: `key-${id}`, mode: "api_key" };
    },
    async failed(profileId: string, _model: string, err: ProviderError) {
      told.push(`failed ${profileId}`);
      return err.kind === "rate_limit" ? "rate_limit" : undefined;
    },
    succeeded(profileId: string) {
      told.push(`succeeded ${profileId}`);
    },
  };
  return { creds: stub as unknown as RunCredentials, told };
}

describe("withAuthProfiles", () => {
  it("a reader that stops after the first chunk closes the model's stream of the chosen key", async () => {
    const model = closableModel(3);
    const { creds, told } = credentials(["fake:one"]);
    const first = await readFirstThenStop(withAuthProfiles(model, creds), modelRequest());
    expect(first).toEqual({ type: "text_delta", delta: "t0" });
    expect(model.streams).toHaveLength(1);
    expect(model.streams[0]?.request.apiKey).toBe("key-fake:one");
    expect(model.streams[0]?.closedEarly).toBe(true);
    expect(told).toEqual([]);
  });

  it("a rate limit before any output sends the call again on the next key; its end marks that key as good", async () => {
    const seen: string[] = [];
    const model: ModelProvider = {
      id: "fake",
      api: "openai-completions",
      async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
        seen.push(request.apiKey ?? "none");
        if (request.apiKey === "key-fake:one") throw new ProviderError("rate_limit", "slow down");
        yield { type: "text_delta", delta: "hi" };
        yield {
          type: "done",
          stopReason: "stop",
          usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
        };
      },
    };
    const { creds, told } = credentials(["fake:one", "fake:two"]);
    const got: string[] = [];
    for await (const ev of withAuthProfiles(model, creds).stream(modelRequest())) got.push(ev.type);
    expect(got).toEqual(["text_delta", "done"]);
    expect(seen).toEqual(["key-fake:one", "key-fake:two"]);
    expect(told).toEqual(["failed fake:one", "succeeded fake:two"]);
  });

  it("a failure after output is not retried on another key: it reaches the reader as it was", async () => {
    const model: ModelProvider = {
      id: "fake",
      api: "openai-completions",
      async *stream(): AsyncGenerator<ModelStreamEvent> {
        yield { type: "text_delta", delta: "partial" };
        throw new ProviderError("rate_limit", "slow down");
      },
    };
    const { creds, told } = credentials(["fake:one", "fake:two"]);
    const got: string[] = [];
    const reading = (async () => {
      for await (const ev of withAuthProfiles(model, creds).stream(modelRequest())) got.push(ev.type);
    })();
    await expect(reading).rejects.toThrow("slow down");
    expect(got).toEqual(["text_delta"]);
    expect(told).toEqual(["failed fake:one"]);
  });
});
