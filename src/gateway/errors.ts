import { RunNotFoundError, RunParamError, ServiceDrainingError } from "../agent/service.js";
import { ErrorCodes, type ErrorShape } from "../protocol/frames.js";
import { SessionKeyError } from "../session/keys.js";

/** An error a method handler throws on purpose: it becomes the error response as is. */
export class GatewayError extends Error {
  readonly shape: ErrorShape;
  constructor(shape: ErrorShape) {
    super(shape.message);
    this.name = "GatewayError";
    this.shape = shape;
  }
}

/** A gateway that cannot start as configured (non-loopback bind without a token, port taken, ...). */
export class GatewayStartError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = "GatewayStartError";
  }
}

const knownCodes = new Set<string>(Object.values(ErrorCodes));

/**
 * Maps what the service and the store throw to wire errors that say which param was wrong. `isTransientStoreError`
 * is the node's rule (src/node/): a store error it names is answered retryable.
 */
export function toErrorShape(err: unknown, isTransientStoreError: (err: unknown) => boolean): ErrorShape {
  if (err instanceof GatewayError) return err.shape;
  if (err instanceof RunNotFoundError) return { code: ErrorCodes.notFound, message: err.message };
  if (err instanceof ServiceDrainingError)
    return { code: ErrorCodes.unavailable, message: err.message, retryable: true };
  if (err instanceof RunParamError) return { code: ErrorCodes.invalidParams, message: `params.${err.message}` };
  if (err instanceof SessionKeyError)
    return { code: ErrorCodes.invalidParams, message: `params.sessionKey: ${err.message}` };
  const e = err as
    | { name?: unknown; code?: unknown; message?: unknown; retryable?: unknown; retryAfterMs?: unknown }
    | undefined;
  if (e?.name === "SessionBusyError") {
    return { code: ErrorCodes.conflict, message: String(e.message), retryable: true };
  }
  const message = typeof e?.message === "string" && e.message ? e.message : String(err);
  // the Postgres server restarting or out of reach: the same request (same idempotency key) may succeed shortly
  if (isTransientStoreError(err)) {
    return { code: ErrorCodes.unavailable, message: `storage unavailable: ${message}`, retryable: true };
  }
  // Service errors carry their own snake_case wire code (queue_full, ...); system errors (ENOENT) do not qualify.
  if (typeof e?.code === "string" && (knownCodes.has(e.code) || /^[a-z][a-z_]*$/.test(e.code))) {
    return {
      code: e.code,
      message,
      ...(e.retryable === true ? { retryable: true } : {}),
      ...(typeof e.retryAfterMs === "number" ? { retryAfterMs: e.retryAfterMs } : {}),
    };
  }
  return { code: ErrorCodes.internal, message };
}
