/**
 * One translation from whatever a model SDK throws (or an in-stream error event carries) to ProviderError, shared by
 * every wire API so that retry, compaction and reply shaping can rely on `kind` alone.
 *
 * SDK error classes are duck-typed rather than imported: the SDKs are loaded lazily, and both the `openai` and the
 * `@anthropic-ai/sdk` errors expose the same `status` / `error` body shape.
 */
import { type HeaderSource, resetAfterMs, retryAfterMs } from "./retry-after.js";
import { ProviderError, type ProviderErrorKind, type ProviderErrorOptions } from "./types.js";

export interface ErrorContext {
  /** provider id from config; every message starts with it so a user knows which endpoint failed */
  provider: string;
  /** the caller's signal: once it fired, whatever the SDK threw is just the fallout of the abort */
  signal?: AbortSignal;
  /** our own idle watchdog fired (the SDK only sees an abort and cannot tell it from a cancel) */
  timedOut?: boolean;
  timeoutMs?: number;
  /** redacted from messages in case an endpoint echoes it back */
  apiKey?: string;
  /** the clock an HTTP-date `Retry-After` is measured against (default Date.now) */
  now?: () => number;
}

/** What an API said about a failure, from an HTTP error body or an in-stream error event. */
export interface ApiErrorInfo {
  status?: number;
  /** the API's own human-readable message */
  message?: string;
  /** OpenAI `code` (e.g. context_length_exceeded, rate_limit_exceeded) */
  code?: string;
  /** OpenAI `type` / Anthropic `error.type` (e.g. overloaded_error, invalid_request_error) */
  type?: string;
  /** from the response's `retry-after-ms` / `Retry-After` header */
  retryAfterMs?: number;
  /** how long the limit lasts, from the same headers or the rate-limit reset headers (retry-after.ts resetAfterMs) */
  resetAfterMs?: number;
}

const KIND_LABEL: Record<ProviderErrorKind, string> = {
  rate_limit: "rate limited",
  server: "server error",
  context_length: "context length exceeded",
  auth: "authentication failed",
  billing: "out of credit",
  model_not_found: "model not found",
  bad_request: "bad request",
  timeout: "timed out",
  aborted: "aborted",
  network: "network error",
  bad_response: "bad response",
};

// Wordings seen from OpenAI, Anthropic, vLLM, llama.cpp and Ollama when the prompt does not fit the window.
const CONTEXT_LENGTH_PATTERN =
  /context[_ ]length|maximum context|context window|prompt is too long|too many tokens|exceeds? the (?:model'?s? )?(?:maximum|context)/i;

// Out of credit or quota: OpenAI's `insufficient_quota` (sent with a 429), Anthropic's "credit balance is too low"
// (a 400), OpenRouter's and others' 402 texts. Waiting does not help: the key's account needs money.
const BILLING_PATTERN =
  /insufficient[_ ]quota|credit balance|insufficient (?:credits?|funds|balance)|out of credits?|billing|payment required|exceeded your current quota/i;

// Rate limits said in words rather than with a 429 (proxies, vLLM, Bedrock, Anthropic's concurrency limit).
const RATE_LIMIT_PATTERN = /too many (?:concurrent )?requests|throttl|rate[_ -]?limit|limit reached/i;

export function classifyApiError(info: ApiErrorInfo): ProviderErrorKind {
  const { status, code, type } = info;
  const text = `${code ?? ""} ${type ?? ""} ${info.message ?? ""}`;
  if (type === "overloaded_error" || status === 529) return "server";
  if (status === 402 || code === "insufficient_quota" || type === "insufficient_quota") return "billing";
  if ((status === undefined || status === 400 || status === 403 || status === 429) && BILLING_PATTERN.test(text)) {
    return "billing";
  }
  if (status === 429 || type === "rate_limit_error" || code === "rate_limit_exceeded") return "rate_limit";
  if ((status === undefined || status === 400 || status === 403 || status >= 500) && RATE_LIMIT_PATTERN.test(text)) {
    return "rate_limit";
  }
  if (status === 401 || status === 403 || type === "authentication_error" || type === "permission_error") {
    return "auth";
  }
  if (status === 404 || code === "model_not_found" || type === "not_found_error") return "model_not_found";
  if (status === 408) return "timeout";
  if (status !== undefined && status >= 500) return "server";
  if (
    (status === undefined || status === 400 || status === 413 || status === 422) &&
    CONTEXT_LENGTH_PATTERN.test(text)
  ) {
    return "context_length";
  }
  if (status !== undefined && status >= 400) return "bad_request";
  if (type === "invalid_request_error") return "bad_request";
  if (type === "api_error" || code === "server_error" || type === "server_error") return "server";
  // An error event in the middle of a stream without any recognisable code: the service gave up on the request,
  // which is worth a retry more often than not.
  return "server";
}

export function apiError(ctx: ErrorContext, info: ApiErrorInfo, cause?: unknown): ProviderError {
  const kind = classifyApiError(info);
  const parts = [`${ctx.provider}:`];
  if (info.status !== undefined) parts.push(String(info.status));
  parts.push(`${KIND_LABEL[kind]}:`);
  parts.push(info.message?.trim() || info.code || info.type || "no error message from the API");
  return new ProviderError(kind, redact(parts.join(" "), ctx.apiKey), {
    status: info.status,
    cause,
    retryAfterMs: info.retryAfterMs,
    resetAfterMs: info.resetAfterMs,
  });
}

export function providerError(
  ctx: ErrorContext,
  kind: ProviderErrorKind,
  detail: string,
  opts: ProviderErrorOptions = {},
): ProviderError {
  return new ProviderError(kind, redact(`${ctx.provider}: ${KIND_LABEL[kind]}: ${detail}`, ctx.apiKey), opts);
}

/** Turn anything thrown while talking to a model into a ProviderError. */
export function toProviderError(err: unknown, ctx: ErrorContext): ProviderError {
  if (ctx.signal?.aborted) {
    if (err instanceof ProviderError && err.kind === "aborted") return err;
    return providerError(ctx, "aborted", "the request was cancelled", { cause: err });
  }
  if (ctx.timedOut) {
    const window = ctx.timeoutMs !== undefined ? ` within ${ctx.timeoutMs} ms` : "";
    return providerError(ctx, "timeout", `no data from the model${window}`, { cause: err });
  }
  if (err instanceof ProviderError) return err;

  const info = apiErrorInfo(err, ctx.now);
  if (info) return apiError(ctx, info, err);

  const name = errorName(err);
  const message = describe(err);
  if (name === "APIConnectionTimeoutError") {
    return providerError(ctx, "timeout", message, { cause: err });
  }
  if (name === "APIUserAbortError" || name === "AbortError") {
    return providerError(ctx, "aborted", "the request was cancelled", { cause: err });
  }
  if (name === "APIConnectionError" || isNetworkFailure(err)) {
    return providerError(ctx, "network", message, { cause: err });
  }
  if (err instanceof SyntaxError) {
    return providerError(ctx, "bad_response", `unparseable data in the stream: ${err.message}`, { cause: err });
  }
  return providerError(ctx, "bad_response", message, { cause: err });
}

/** Pull status, message, code and type out of an SDK APIError; undefined when `err` carries no API answer. */
function apiErrorInfo(err: unknown, now: (() => number) | undefined): ApiErrorInfo | undefined {
  if (!isRecord(err)) return undefined;
  const status = typeof err.status === "number" ? err.status : undefined;
  const body = isRecord(err.error) ? err.error : undefined;
  // Anthropic keeps the whole body ({type:"error", error:{type, message}}); OpenAI keeps only its `error` member.
  const inner = body && isRecord(body.error) ? body.error : body;
  if (status === undefined && inner === undefined) return undefined;
  const message = stringOf(inner?.message) ?? stringOf(err.apiMessage) ?? bareMessage(err.message, status);
  const code = stringOf(err.code) ?? stringOf(inner?.code);
  const type = stringOf(inner?.type) ?? stringOf(err.type);
  // vLLM and other OpenAI-compatible servers send mid-stream errors as `{error:{code: 400, ...}}` with no HTTP status
  const numericCode = typeof inner?.code === "number" && inner.code >= 400 && inner.code < 600 ? inner.code : undefined;
  const headers = isRecord(err.headers) ? (err.headers as HeaderSource) : undefined;
  return {
    status: status ?? numericCode,
    message,
    code,
    type,
    retryAfterMs: retryAfterMs(headers, now),
    resetAfterMs: resetAfterMs(headers, now),
  };
}

/** A body that was not JSON ends up in the SDK's message as "<status> <text>"; keep just the text. */
function bareMessage(message: unknown, status: number | undefined): string | undefined {
  if (status === undefined || typeof message !== "string") return undefined;
  const text = message.startsWith(`${status} `) ? message.slice(String(status).length + 1) : message;
  return text === "status code (no body)" ? undefined : stringOf(text);
}

function isNetworkFailure(err: unknown): boolean {
  // fetch (undici) reports every transport failure as a TypeError ("fetch failed", "terminated") with the socket
  // error as its cause
  if (err instanceof TypeError) return true;
  const code = isRecord(err) ? err.code : undefined;
  // Node's own http/https (openai-completions) throw the socket's error itself: a system error code (ECONNRESET,
  // ETIMEDOUT, EPROTO, EAI_AGAIN, …) or a TLS one (a certificate the machine does not trust, an expired one, a
  // name that does not match). An API's error codes never get here: errors with an API answer are read above.
  return typeof code === "string" && TRANSPORT_ERROR_CODE.test(code);
}

const TRANSPORT_ERROR_CODE =
  /^(E(?!RR_)[A-Z0-9_]+$|UND_ERR|ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|HOSTNAME_MISMATCH)/;

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // fetch wraps the socket error ("connect ECONNREFUSED 127.0.0.1:11434") a level or two down; that is the useful part
  let root: Error = err;
  for (let depth = 0; depth < 5 && root.cause instanceof Error; depth++) root = root.cause;
  if (root === err || !root.message || err.message.includes(root.message)) return err.message || err.name;
  const code =
    isRecord(root) && typeof root.code === "string" && !root.message.includes(root.code) ? `${root.code}: ` : "";
  return `${err.message} (${code}${root.message})`;
}

function errorName(err: unknown): string | undefined {
  if (!isRecord(err)) return undefined;
  const ctorName = typeof err.constructor === "function" ? err.constructor.name : undefined;
  if (ctorName && ctorName !== "Error" && ctorName !== "Object") return ctorName;
  return stringOf(err.name);
}

const SECRET_PATTERN = /\b(sk-(?:ant-)?[A-Za-z0-9_-]{6})[A-Za-z0-9_-]{10,}/g;

function redact(message: string, apiKey: string | undefined): string {
  let out = message;
  if (apiKey && apiKey.length >= 4 && apiKey !== "none") out = out.split(apiKey).join("***");
  return out.replace(SECRET_PATTERN, "$1***");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/** The context every provider's error mapping needs for one request. */
export function requestErrorContext(
  init: { id: string; apiKey?: string; timeoutMs?: number },
  request: { signal: AbortSignal; apiKey?: string },
): ErrorContext {
  // the call's own key (an auth profile's) is the one an endpoint could echo back
  return {
    provider: init.id,
    signal: request.signal,
    apiKey: request.apiKey ?? init.apiKey,
    timeoutMs: init.timeoutMs,
  };
}

/**
 * The same error, marked as having happened after the model had streamed output. Providers know that only in the
 * stream wrapper around their generator, after the error was mapped.
 */
export function markAfterOutput(err: ProviderError): ProviderError {
  if (err.afterOutput) return err;
  const marked = new ProviderError(err.kind, err.message, {
    status: err.status,
    cause: err.cause,
    retryAfterMs: err.retryAfterMs,
    resetAfterMs: err.resetAfterMs,
    afterOutput: true,
  });
  marked.stack = err.stack;
  return marked;
}

// Wordings with which OpenAI, Anthropic and Azure decline a request on content grounds.
const REFUSAL_PATTERN = /refus|safety|content policy|content management policy|content_filter/i;

/** A request the model's operator declined on content grounds (as opposed to one we built wrongly). */
export function isRefusal(err: ProviderError): boolean {
  return err.kind === "bad_request" && REFUSAL_PATTERN.test(err.message);
}
