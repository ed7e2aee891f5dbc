/** Errors the queue answers with; each has the wire error code the gateway sends. */

export class RunNotFoundError extends Error {
  readonly code = "not_found";
  constructor(runId: string) {
    super(`no run with runId "${runId}"`);
    this.name = "RunNotFoundError";
  }
}

export class ServiceDrainingError extends Error {
  readonly code = "unavailable";
  readonly retryable = true;
  constructor() {
    super("the gateway is shutting down and accepts no new runs; retry against the restarted gateway");
    this.name = "ServiceDrainingError";
  }
}

/** The queue is full and the drop policy is `new`: the newcomer is refused (and nothing is stored). */
export class QueueFullError extends Error {
  readonly code = "queue_full";
  readonly retryable = true;
  constructor(sessionKey: string, cap: number) {
    super(`session ${sessionKey} already has ${cap} queued messages (messages.queue.cap); message refused`);
    this.name = "QueueFullError";
  }
}

/**
 * A request param that is wrong. The message names the param, or a part of it, exactly once at its start
 * (`sessionId: unknown session id "x"`, `attachments[1]: cannot decode …`), whether or not the thrower already wrote
 * it, so the wire's `params.` prefix goes in front of it and never doubles it.
 */
export class RunParamError extends Error {
  readonly code = "invalid_params";
  readonly param: string;
  constructor(param: string, message: string) {
    super(namesParam(message, param) ? message : `${param}: ${message}`);
    this.name = "RunParamError";
    this.param = param;
  }
}

/** `param: …`, `param[1]…` or `param.key…`: the message already starts with the param (or a path inside it). */
function namesParam(message: string, param: string): boolean {
  return message.startsWith(param) && [":", "[", "."].includes(message.charAt(param.length));
}
