import { describe, expect, it } from "vitest";
import { apiError, toProviderError } from "./errors.js";
import { ProviderError, type ProviderErrorKind } from "./types.js";

const ctx = { provider: "openai" };

/** Shaped like the SDKs' APIError: HTTP status plus the parsed error body. */
function sdkError(status: number | undefined, error: unknown): Error {
  return Object.assign(new Error(`${status} boom`), { status, error });
}

describe("provider error mapping", () => {
  it.each<[string, number | undefined, unknown, ProviderErrorKind]>([
    ["429", 429, { message: "Rate limit reached" }, "rate_limit"],
    ["502 from a proxy", 502, undefined, "server"],
    ["503", 503, { message: "Service unavailable" }, "server"],
    ["529 overloaded", 529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, "server"],
    ["401", 401, { message: "Incorrect API key" }, "auth"],
    ["403", 403, { type: "error", error: { type: "permission_error", message: "no access" } }, "auth"],
    ["422", 422, { message: "Unprocessable" }, "bad_request"],
    ["400 unknown parameter", 400, { message: "Unrecognized request argument: foo" }, "bad_request"],
    [
      "400 too many tokens (llama.cpp)",
      400,
      { message: "the request exceeds the available context size, too many tokens" },
      "context_length",
    ],
    [
      "400 context_length_exceeded code",
      400,
      { message: "Too long.", code: "context_length_exceeded" },
      "context_length",
    ],
    [
      "vLLM error chunk with a numeric code",
      undefined,
      { message: "This model's maximum context length is 4096 tokens", code: 400 },
      "context_length",
    ],
    [
      "overloaded error event mid-stream",
      undefined,
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
      "server",
    ],
  ])("classifies %s", (_label, status, body, kind) => {
    expect(toProviderError(sdkError(status, body), ctx).kind).toBe(kind);
  });

  it("says aborted whenever the caller's signal fired, whatever the SDK threw", () => {
    const controller = new AbortController();
    controller.abort();
    const err = toProviderError(new TypeError("terminated"), { ...ctx, signal: controller.signal });
    expect(err.kind).toBe("aborted");
    expect(err.retryable).toBe(false);
  });

  it("names the SDK's own timeout a timeout", () => {
    class APIConnectionTimeoutError extends Error {}
    expect(toProviderError(new APIConnectionTimeoutError("Request timed out."), ctx).kind).toBe("timeout");
  });

  it("reports refused connections as network errors with the socket's reason", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:11434"), { code: "ECONNREFUSED" });
    const err = toProviderError(new TypeError("fetch failed", { cause: refused }), { provider: "ollama" });
    expect(err.kind).toBe("network");
    expect(err.message).toBe("ollama: network error: fetch failed (connect ECONNREFUSED 127.0.0.1:11434)");
  });

  it("keeps API keys out of messages even when the API echoes one back", () => {
    const key = "sk-proj-AbCdEf0123456789xyz";
    const viaContext = toProviderError(sdkError(401, { message: `Incorrect API key provided: ${key}` }), {
      provider: "openai",
      apiKey: key,
    });
    expect(viaContext.message).not.toContain(key);
    const unknownKey = apiError({ provider: "openai" }, { status: 401, message: `bad key ${key}` });
    expect(unknownKey.message).not.toContain(key);
  });

  it("passes ProviderErrors through unchanged", () => {
    const original = new ProviderError("bad_response", "openai: bad response: x");
    expect(toProviderError(original, ctx)).toBe(original);
  });
});
