/**
 * Wire frames of the OpenClaw gateway protocol (v4 subset, SPEC 14). Shared by the gateway and the client, so both
 * ends agree on field names, error codes and the limits announced in `hello-ok`.
 */

export const PROTOCOL_VERSION = 4;

/** Before `connect` succeeds a frame may be at most this big; an unauthenticated peer cannot make us parse more. */
export const PRE_AUTH_MAX_BYTES = 64 * 1024;

export interface RequestFrame<P = unknown> {
  type: "req";
  id: string;
  method: string;
  params?: P;
}

export interface ErrorShape {
  code: ErrorCode | (string & {});
  message: string;
  details?: unknown;
  retryable?: boolean;
  /** when a retry may succeed (`rate_limited`: the token's limit frees up then) */
  retryAfterMs?: number;
}

export interface ResponseFrame<T = unknown> {
  type: "res";
  id: string;
  ok: boolean;
  payload?: T;
  error?: ErrorShape;
}

export interface EventFrame<T = unknown> {
  type: "event";
  event: string;
  payload?: T;
  seq?: number;
}

export type GatewayFrame = RequestFrame | ResponseFrame | EventFrame;

export const ErrorCodes = {
  invalidRequest: "invalid_request",
  invalidParams: "invalid_params",
  unknownMethod: "unknown_method",
  unauthorized: "unauthorized",
  /** authenticated, but this client may not touch that session or run (SPEC 21) */
  forbidden: "forbidden",
  notFound: "not_found",
  unavailable: "unavailable",
  conflict: "conflict",
  internal: "internal_error",
  /** a method of the OpenClaw protocol that Loopgate does not serve (the message names it) */
  unsupported: "unsupported",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/**
 * A response to a frame we could not read an id from (malformed JSON, missing id) still has to be a valid
 * ResponseFrame, whose `id` must be a non-empty string: it carries this placeholder.
 */
export const UNKNOWN_REQUEST_ID = "unknown";

/** Methods the gateway serves after `connect`; `hello-ok.features.methods` lists exactly these. */
export const GATEWAY_METHODS = [
  "health",
  "agent",
  "agent.wait",
  "chat.send",
  "chat.abort",
  "chat.history",
  "sessions.list",
  "sessions.get",
  "sessions.reset",
  "sessions.delete",
  "exec.approval.list",
  "exec.approval.resolve",
  "audit.list",
  "cron.list",
  "cron.add",
  "cron.remove",
  "cron.run",
  "runs.list",
  "sessions.subscribe",
  "sessions.unsubscribe",
  "sessions.messages.subscribe",
  "sessions.messages.unsubscribe",
  "sessions.observer.visibility",
  "sessions.create",
  "sessions.resolve",
  "sessions.describe",
  "sessions.patch",
  "chat.startup",
  "chat.metadata",
  "agents.list",
  "agent.identity.get",
  "models.list",
  "models.authStatus",
  "models.authClear",
  "status",
  "update.status",
  "commands.list",
  "config.get",
  "cron.status",
  "plugin.approval.list",
  "question.list",
  "agent.events",
  "diagnostics.list",
  "mcp.status",
  // the console's operator pages (issue 31)
  "cron.update",
  "cron.runs",
  "logs.tail",
  "config.schema",
  // live configuration (SPEC 26)
  "config.patch",
  "config.apply",
  "skills.status",
  "skills.update",
  "plugins.list",
  "plugins.setEnabled",
  "exec.approvals.get",
  "exec.approvals.set",
  "usage.summary",
  "budget.approval.list",
  "budget.approval.resolve",
] as const;
export type GatewayMethod = (typeof GATEWAY_METHODS)[number];

export const GATEWAY_EVENTS = [
  "connect.challenge",
  "agent",
  "chat",
  "tick",
  "shutdown",
  "exec.approval.requested",
  "exec.approval.resolved",
  "budget.approval.requested",
  "budget.approval.resolved",
  "sessions.changed",
  "session.message",
  "diagnostic",
] as const;
export type GatewayEventName = (typeof GATEWAY_EVENTS)[number];

/**
 * Operator scopes (OpenClaw names). A token holder is fully trusted, so scopes are something a client narrows
 * itself to, not a privilege it is granted: `operator.admin` implies the others. `operator.approvals` sees and
 * answers exec approvals (and nothing else), so an approval console need not hold admin.
 */
export const OPERATOR_SCOPES = ["operator.admin", "operator.read", "operator.write", "operator.approvals"] as const;
export type OperatorScope = (typeof OPERATOR_SCOPES)[number];
