import { describe, expect, it } from "vitest";
import { BudgetExceededError, RateLimitedError } from "../../limits/errors.js";
import { ErrorCodes } from "../../protocol/frames.js";
import { QueueFullError, RunParamError, ServiceDrainingError } from "../../queue/errors.js";
import { GatewayError } from "../errors.js";
import { httpErrorOf } from "./errors.js";

const notTransient = () => false;

describe("what the shared intake refuses, as the HTTP status an OpenAI client acts on", () => {
  it("each refusal of the agent method's intake has its status, type and retry-after", () => {
    const cases: Array<[unknown, number, string, string | null, string | undefined]> = [
      [
        new RunParamError("sessionKey", "invalid session key"),
        400,
        "invalid_request_error",
        "invalid_params",
        undefined,
      ],
      [
        new GatewayError({ code: ErrorCodes.forbidden, message: "this client may not send to session x" }),
        403,
        "permission_error",
        "forbidden",
        undefined,
      ],
      [new QueueFullError("agent:main:busy", 1), 409, "conflict_error", "queue_full", "1"],
      [
        new RateLimitedError("runsPerMinute 5 reached", 12_300, "runsPerMinute"),
        429,
        "rate_limit_error",
        "rate_limited",
        "13",
      ],
      [
        new BudgetExceededError({ budget: "daily", window: "day", unit: "usd", spent: 5, limit: 5 }),
        429,
        "insufficient_quota",
        "budget_exceeded",
        undefined,
      ],
      [new ServiceDrainingError(), 503, "service_unavailable_error", "unavailable", "1"],
      [new Error("disk I/O error"), 500, "server_error", "internal_error", undefined],
    ];
    for (const [err, status, type, code, retryAfter] of cases) {
      const e = httpErrorOf(err, notTransient);
      expect([e.status, e.type, e.code, e.headers["retry-after"]], String(err)).toEqual([
        status,
        type,
        code,
        retryAfter,
      ]);
      expect(e.body().error.message).not.toMatch(/^params\./);
    }
  });

  it("a store error the node calls transient is a retryable 503", () => {
    const e = httpErrorOf(new Error("connection terminated"), () => true);
    expect([e.status, e.headers["retry-after"]]).toEqual([503, "1"]);
    expect(e.message).toContain("storage unavailable");
  });
});
