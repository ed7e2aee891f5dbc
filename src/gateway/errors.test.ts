import { describe, expect, it } from "vitest";
import { ErrorCodes } from "../protocol/frames.js";
import { isTransientPostgresError } from "../storage/postgres/transient-errors.js";
import { toErrorShape } from "./errors.js";

const onSqlite = () => false;

describe("toErrorShape", () => {
  it("a Postgres server that is restarting or unreachable answers unavailable and retryable, not internal", () => {
    const terminated = Object.assign(new Error("terminating connection due to administrator command"), {
      code: "57P01",
    });
    expect(toErrorShape(terminated, isTransientPostgresError)).toEqual({
      code: ErrorCodes.unavailable,
      message: "storage unavailable: terminating connection due to administrator command",
      retryable: true,
    });
    expect(toErrorShape(new Error("Connection terminated unexpectedly"), isTransientPostgresError)).toMatchObject({
      code: ErrorCodes.unavailable,
      retryable: true,
    });
    // a constraint violation is no outage: retrying it would fail the same way
    const duplicate = Object.assign(new Error("duplicate key value violates unique constraint"), { code: "23505" });
    expect(toErrorShape(duplicate, isTransientPostgresError)).toEqual({
      code: ErrorCodes.internal,
      message: duplicate.message,
    });
  });

  it("on SQLite the Postgres rule does not apply: a socket error code is not called a storage outage", () => {
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    expect(toErrorShape(reset, onSqlite)).toEqual({ code: ErrorCodes.internal, message: "read ECONNRESET" });
  });
});
