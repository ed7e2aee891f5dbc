import { describe, expect, it } from "vitest";
import { ConfigError } from "../../config/errors.js";
import { ModelResolutionError } from "../../providers/registry.js";
import { ProviderError, type ProviderErrorKind } from "../../providers/types.js";
import {
  AllModelsFailedError,
  type FallbackNotice,
  fallbackReason,
  modelChain,
  runWithFallback,
  shouldFallback,
} from "./fallback.js";

const fail = (kind: ProviderErrorKind, message: string) => new ProviderError(kind, message);

describe("modelChain", () => {
  it("puts the primary first, then the fallbacks in order, each once", () => {
    expect(
      modelChain({
        primary: "openai/gpt-4o",
        fallbacks: ["anthropic/claude-sonnet-4", "openai/gpt-4o", "local/llama3", "anthropic/claude-sonnet-4"],
      }),
    ).toEqual(["openai/gpt-4o", "anthropic/claude-sonnet-4", "local/llama3"]);
  });

  it("takes a bare model ref as a primary without fallbacks", () => {
    expect(modelChain("local/llama3")).toEqual(["local/llama3"]);
  });

  it("uses the fallbacks alone when no primary is set, and nothing when nothing is", () => {
    expect(modelChain({ fallbacks: ["local/llama3"] })).toEqual(["local/llama3"]);
    expect(modelChain({})).toEqual([]);
    expect(modelChain(undefined)).toEqual([]);
  });
});

describe("which failures move the run to the next model", () => {
  it.each<[string, ProviderErrorKind, string]>([
    ["a refused key", "auth", "openai: 401 authentication failed: Incorrect API key"],
    ["an unknown model", "model_not_found", "openai: 404 model not found: gpt-9"],
    ["rate limits that outlasted the retries", "rate_limit", "openai: 429 rate limited: slow down"],
    ["a server still overloaded", "server", "anthropic: 529 server error: Overloaded"],
    ["a refused connection", "network", "local: network error: fetch failed"],
    ["the idle watchdog", "timeout", "openai: no data from the model for 120 s (idle timeout)"],
    ["context still too long after compaction", "context_length", "local: 400 context length exceeded"],
    ["a parameter the model does not support", "bad_request", "local: 400 bad request: model does not support tools"],
    ["an unreadable answer", "bad_response", "local: bad response: tool call arguments are not JSON"],
  ])("falls back on %s", (_label, kind, message) => {
    expect(fallbackReason(fail(kind, message))).toBe(kind);
    expect(shouldFallback(fail(kind, message))).toBe(true);
  });

  it("skips a model whose provider is unknown or misconfigured", () => {
    expect(fallbackReason(new ModelResolutionError('unknown provider "nope" in model "nope/x"'))).toBe("unavailable");
    expect(fallbackReason(new ConfigError(["models.providers.openai.apiKey: OPENAI_API_KEY is not set"]))).toBe(
      "unavailable",
    );
  });

  it("ends the run on a cancel, a content refusal, or an error that is not a model failure", () => {
    expect(shouldFallback(fail("aborted", "openai: aborted: the request was cancelled"))).toBe(false);
    expect(shouldFallback(fail("bad_request", "openai: 400 bad request: rejected by our content policy"))).toBe(false);
    expect(shouldFallback(new TypeError("Cannot read properties of undefined"))).toBe(false);
    expect(shouldFallback("a string")).toBe(false);
  });
});

describe("runWithFallback", () => {
  function models(outcomes: Record<string, unknown>) {
    const tried: string[] = [];
    const attempt = async (model: string) => {
      tried.push(model);
      const outcome = outcomes[model];
      if (outcome instanceof Error) throw outcome;
      return outcome as string;
    };
    return { attempt, tried };
  }

  it("answers with the primary when it works, and names it", async () => {
    const { attempt, tried } = models({ "openai/gpt-4o": "hi" });
    const notices: FallbackNotice[] = [];
    const out = await runWithFallback({
      chain: ["openai/gpt-4o", "local/llama3"],
      attempt,
      onFallback: (n) => {
        notices.push(n);
      },
    });
    expect(out).toEqual({ result: "hi", model: "openai/gpt-4o" });
    expect(tried).toEqual(["openai/gpt-4o"]);
    expect(notices).toEqual([]);
  });

  it("moves past failing models, announcing each move, and names the model that answered", async () => {
    const refused = fail("auth", "openai: 401 authentication failed: bad key");
    const overloaded = fail("server", "anthropic: 529 server error: Overloaded");
    const { attempt, tried } = models({
      "openai/gpt-4o": refused,
      "anthropic/claude-sonnet-4": overloaded,
      "local/llama3": "from llama",
    });
    const notices: Array<Omit<FallbackNotice, "error">> = [];
    const out = await runWithFallback({
      chain: ["openai/gpt-4o", "anthropic/claude-sonnet-4", "local/llama3"],
      attempt,
      onFallback: ({ from, to, reason }) => {
        notices.push({ from, to, reason });
      },
    });
    expect(out).toEqual({ result: "from llama", model: "local/llama3" });
    expect(tried).toEqual(["openai/gpt-4o", "anthropic/claude-sonnet-4", "local/llama3"]);
    expect(notices).toEqual([
      { from: "openai/gpt-4o", to: "anthropic/claude-sonnet-4", reason: "auth" },
      { from: "anthropic/claude-sonnet-4", to: "local/llama3", reason: "server" },
    ]);
  });

  it("when all models fail, lists each model and why, one line each", async () => {
    const { attempt } = models({
      "openai/gpt-4o": fail("rate_limit", "openai: 429 rate limited: Rate limit reached"),
      "local/llama3": fail("network", "local: network error: fetch failed (connect ECONNREFUSED 127.0.0.1:9)"),
    });
    const err = await runWithFallback({ chain: ["openai/gpt-4o", "local/llama3"], attempt }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AllModelsFailedError);
    expect((err as Error).message).toBe(
      [
        "all 2 models failed:",
        "- openai/gpt-4o: 429 rate limited: Rate limit reached",
        "- local/llama3: network error: fetch failed (connect ECONNREFUSED 127.0.0.1:9)",
      ].join("\n"),
    );
    expect((err as AllModelsFailedError).failures.map((f) => f.reason)).toEqual(["rate_limit", "network"]);
    expect((err as AllModelsFailedError).reason).toBe("network");
  });

  it("keeps a multi-line error on its model's line", async () => {
    const { attempt } = models({
      "a/m": new ConfigError(["models.providers.a.apiKey: A_KEY is not set in the environment"]),
      "b/m": fail("auth", "b: 401 authentication failed: no"),
    });
    const err = (await runWithFallback({ chain: ["a/m", "b/m"], attempt }).catch((e: unknown) => e)) as Error;
    expect(err.message.split("\n")).toEqual([
      "all 2 models failed:",
      "- a/m: invalid config: - models.providers.a.apiKey: A_KEY is not set in the environment",
      "- b/m: 401 authentication failed: no",
    ]);
  });

  it("rethrows a single model's failure as it is: there is nothing to fall back to", async () => {
    const refused = fail("auth", "openai: 401 authentication failed: bad key");
    const { attempt } = models({ "openai/gpt-4o": refused });
    await expect(runWithFallback({ chain: ["openai/gpt-4o"], attempt })).rejects.toBe(refused);
  });

  it("does not start another model after a cancel", async () => {
    const cancelled = fail("aborted", "openai: aborted: the request was cancelled");
    const { attempt, tried } = models({ "openai/gpt-4o": cancelled, "local/llama3": "never" });
    await expect(runWithFallback({ chain: ["openai/gpt-4o", "local/llama3"], attempt })).rejects.toBe(cancelled);
    expect(tried).toEqual(["openai/gpt-4o"]);
  });

  it("does not start another model once the run's signal fired, whatever the failure says", async () => {
    const controller = new AbortController();
    const outage = fail("network", "openai: network error: terminated");
    const tried: string[] = [];
    const run = runWithFallback({
      chain: ["openai/gpt-4o", "local/llama3"],
      signal: controller.signal,
      attempt: async (model) => {
        tried.push(model);
        controller.abort();
        throw outage;
      },
    });
    await expect(run).rejects.toBe(outage);
    expect(tried).toEqual(["openai/gpt-4o"]);
  });

  it("says so clearly when there is no model at all", async () => {
    await expect(runWithFallback({ chain: [], attempt: async () => "x" })).rejects.toThrow(
      "no model to run: set agents.defaults.model.primary or the agent's model",
    );
  });
});
