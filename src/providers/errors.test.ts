import { describe, expect, it } from "vitest";
import { apiError, isRefusal, markAfterOutput, toProviderError } from "./errors.js";
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
    ["402 payment required", 402, { message: "Payment required" }, "billing"],
    [
      "OpenAI insufficient_quota (sent as a 429)",
      429,
      { message: "You exceeded your current quota, please check your plan", code: "insufficient_quota" },
      "billing",
    ],
    [
      "Anthropic credit balance (a 400)",
      400,
      { type: "error", error: { type: "invalid_request_error", message: "Your credit balance is too low" } },
      "billing",
    ],
    ["too many concurrent requests (a 400)", 400, { message: "Too many concurrent requests" }, "rate_limit"],
    ["throttling (a 400)", 400, { message: "ThrottlingException: Rate exceeded" }, "rate_limit"],
    ["limit reached, from a 503 proxy", 503, { message: "Usage limit reached for this key" }, "rate_limit"],
    ["throttled error event mid-stream", undefined, { message: "Request throttled" }, "rate_limit"],
    ["503", 503, { message: "Service unavailable" }, "server"],
    ["529 overloaded", 529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, "server"],
    ["401", 401, { message: "Incorrect API key" }, "auth"],
    ["403", 403, { type: "error", error: { type: "permission_error", message: "no access" } }, "auth"],
    ["422", 422, { message: "Unprocessable" }, "bad_request"],
    [
      "404 (OpenAI model_not_found)",
      404,
      { message: "The model `x` does not exist", code: "model_not_found" },
      "model_not_found",
    ],
    [
      "404 (Anthropic not_found_error)",
      404,
      { type: "error", error: { type: "not_found_error", message: "model: x" } },
      "model_not_found",
    ],
    ["404 from Ollama", 404, { message: 'model "llama9" not found, try pulling it first' }, "model_not_found"],
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

  it("regression: a connect timeout or an untrusted TLS certificate from node:http is a network error, not a bad response", () => {
    // fetch wrapped these in a TypeError; Node's http/https throw the socket's or the TLS layer's error itself
    const cases = [
      Object.assign(new Error("connect ETIMEDOUT 10.0.0.9:443"), { code: "ETIMEDOUT" }),
      Object.assign(new Error("write EPROTO"), { code: "EPROTO" }),
      Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }),
      Object.assign(new Error("certificate has expired"), { code: "CERT_HAS_EXPIRED" }),
      Object.assign(new Error("unable to verify the first certificate"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" }),
      Object.assign(new Error("Hostname/IP does not match certificate's altnames"), {
        code: "ERR_TLS_CERT_ALTNAME_INVALID",
      }),
    ];
    for (const cause of cases) {
      const err = toProviderError(cause, { provider: "openai" });
      expect(err.kind, cause.message).toBe("network");
      expect(err.message).toBe(`openai: network error: ${cause.message}`);
    }
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

  it("reads Retry-After from the SDK error's Headers, as a date measured against the injected clock", () => {
    const now = Date.parse("2025-03-01T10:00:00Z");
    const headers = new Headers({ "retry-after": "Sat, 01 Mar 2025 10:00:30 GMT" });
    const thrown = Object.assign(sdkError(429, { message: "slow down" }), { headers });
    expect(toProviderError(thrown, { ...ctx, now: () => now }).retryAfterMs).toBe(30_000);
  });

  it("leaves retryAfterMs unset when the response sent no usable header", () => {
    const thrown = Object.assign(sdkError(503, { message: "busy" }), {
      headers: new Headers({ "retry-after": "soon" }),
    });
    expect(toProviderError(thrown, ctx).retryAfterMs).toBeUndefined();
    expect(toProviderError(sdkError(503, { message: "busy" }), ctx).retryAfterMs).toBeUndefined();
  });

  it("marks an error as after output without losing what the server said", () => {
    const original = new ProviderError("network", "openai: network error: terminated", {
      status: 502,
      retryAfterMs: 9,
    });
    const marked = markAfterOutput(original);
    expect(marked).toMatchObject({ kind: "network", status: 502, retryAfterMs: 9, afterOutput: true });
    expect(marked.message).toBe(original.message);
    expect(marked.retryable).toBe(false);
    expect(original.retryable).toBe(true);
  });

  it("tells a content refusal from a request we built wrongly", () => {
    expect(
      isRefusal(new ProviderError("bad_request", "azure: 400 bad request: filtered by content management policy")),
    ).toBe(true);
    expect(isRefusal(new ProviderError("bad_request", "openai: 400 bad request: Unrecognized request argument"))).toBe(
      false,
    );
    expect(isRefusal(new ProviderError("auth", "openai: 401 authentication failed: content policy"))).toBe(false);
  });
});
