import type { ErrorShape } from "../protocol/frames.js";

/** The gateway answered a request (or the handshake) with an error. */
export class GatewayRequestError extends Error {
  readonly code: string;
  readonly details?: unknown;
  readonly retryable: boolean;
  readonly method: string;
  constructor(method: string, error: ErrorShape) {
    super(error.message);
    this.name = "GatewayRequestError";
    this.method = method;
    this.code = error.code;
    this.details = error.details;
    this.retryable = error.retryable === true;
  }
}

export type GatewayConnectFailure = "unreachable" | "timeout" | "closed";

/** No gateway session could be established: nothing listening, no answer in time, or the socket closed early. */
export class GatewayConnectError extends Error {
  readonly reason: GatewayConnectFailure;
  readonly url: string;
  constructor(reason: GatewayConnectFailure, url: string, message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = "GatewayConnectError";
    this.reason = reason;
    this.url = url;
  }
}

/** Code of the error pending requests are rejected with when the connection goes away under them. */
export const CONNECTION_CLOSED = "connection_closed";
