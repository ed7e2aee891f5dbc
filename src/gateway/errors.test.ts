import { describe, expect, it } from "vitest";
import { ErrorCodes } from "../protocol/frames.js";
import { toErrorShape } from "./errors.js";

describe("toErrorShape", () => {
  it("a Postgres server that is restarting or unreachable answers unavailable and retryable, not internal", () => {
    const terminated = Object.assign(new Error("terminating connection due to administrator command"), {
      code: "57P01",
    });
    expect(toErrorShape(terminated)).toEqual({
      code: ErrorCodes.unavailable,
      message: "storage unavailable: terminating connection due to administrator command",
      retryable: true,
    });
    expect(toErrorShape(new Error("Connection terminated unexpectedly"))).toMatchObject({
      code: ErrorCodes.unavailable,
      retryable: true,
    });
    // a constraint violation is no outage: retrying it would fail the same way
    const duplicate = Object.assign(new Error("duplicate key value violates unique constraint"), { code: "23505" });
    expect(toErrorShape(duplicate)).toEqual({ code: ErrorCodes.internal, message: duplicate.message });
  });
});
