import type http from "node:http";
import { ErrorCodes, type ErrorShape } from "../../protocol/frames.js";
import { toErrorShape } from "../errors.js";

/** OpenAI's error body: `{error: {message, type, param, code}}` (what its client libraries parse). */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * A request this surface refuses: the HTTP status, OpenAI's error `type` and `code`, the field at fault (`param`)
 * and any header the client should read (`retry-after`).
 */
export class OpenAiHttpError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string | null;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    message: string,
    opts: { type?: string; code?: string; param?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = "OpenAiHttpError";
    this.status = status;
    this.type = opts.type ?? typeForStatus(status);
    this.code = opts.code ?? null;
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
  }

  body(): OpenAiErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** The `type` OpenAI's API sends with each status. */
function typeForStatus(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 409) return "conflict_error";
  if (status === 413) return "invalid_request_error";
  if (status === 429) return "rate_limit_error";
  if (status === 503) return "service_unavailable_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/**
 * What the shared intake (run-intake.ts, the queue, the spend limits) throws, as an HTTP answer. The wire error
 * codes of the WebSocket protocol map to statuses; the message is the same one a WebSocket client reads, with the
 * `params.` prefix of the `agent` method's params dropped (an HTTP client never sent them).
 */
export function httpErrorOf(err: unknown, isTransientStoreError: (err: unknown) => boolean): OpenAiHttpError {
  if (err instanceof OpenAiHttpError) return err;
  return fromShape(toErrorShape(err, isTransientStoreError));
}

export function fromShape(shape: ErrorShape): OpenAiHttpError {
  const message = shape.message.replace(/^params\./, "");
  const retry =
    typeof shape.retryAfterMs === "number"
      ? { "retry-after": String(Math.max(1, Math.ceil(shape.retryAfterMs / 1000))) }
      : undefined;
  switch (shape.code) {
    case ErrorCodes.invalidParams:
    case ErrorCodes.invalidRequest:
      return new OpenAiHttpError(400, message, { code: shape.code });
    case ErrorCodes.unauthorized:
      // a token without the scope the request needs: authenticated, so 403 (401 is for no or a bad token)
      return new OpenAiHttpError(403, message, { code: "missing_scope" });
    case ErrorCodes.forbidden:
      return new OpenAiHttpError(403, message, { code: "forbidden" });
    case ErrorCodes.notFound:
      return new OpenAiHttpError(404, message, { code: "not_found" });
    case ErrorCodes.conflict:
      return new OpenAiHttpError(409, message, { code: "session_busy" });
    case "queue_full":
      return new OpenAiHttpError(409, message, { code: "queue_full", headers: { "retry-after": "1" } });
    case "rate_limited":
      return new OpenAiHttpError(429, message, { code: "rate_limited", headers: retry ?? { "retry-after": "1" } });
    case "budget_exceeded":
      return new OpenAiHttpError(429, message, { type: "insufficient_quota", code: "budget_exceeded" });
    case ErrorCodes.unavailable:
      return new OpenAiHttpError(503, message, { code: "unavailable", headers: retry ?? { "retry-after": "1" } });
    default:
      return new OpenAiHttpError(500, message, { code: shape.code });
  }
}

/** Sends the error as JSON; a response whose headers already went out (a stream) is the caller's to end. */
export function sendHttpError(res: http.ServerResponse, err: OpenAiHttpError, opts: { close?: boolean } = {}): void {
  if (res.headersSent) return;
  const text = JSON.stringify(err.body());
  res.writeHead(err.status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...err.headers,
    // a request whose body was not read to its end: the connection cannot carry another request
    ...(opts.close ? { connection: "close" } : {}),
  });
  res.end(text);
}
