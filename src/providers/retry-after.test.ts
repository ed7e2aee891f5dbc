import { describe, expect, it } from "vitest";
import { parseRetryAfter, parseRetryAfterMs, retryAfterMs } from "./retry-after.js";

const NOW = Date.parse("2025-03-01T10:00:00Z");

describe("Retry-After headers", () => {
  it("reads Retry-After as seconds, fractions included", () => {
    expect(parseRetryAfter("1", NOW)).toBe(1000);
    expect(parseRetryAfter(" 0.25 ", NOW)).toBe(250);
    expect(parseRetryAfter("0", NOW)).toBe(0);
  });

  it("reads Retry-After as an HTTP date, relative to now, and never negative", () => {
    expect(parseRetryAfter("Sat, 01 Mar 2025 10:00:05 GMT", NOW)).toBe(5000);
    expect(parseRetryAfter("Sat, 01 Mar 2025 09:59:00 GMT", NOW)).toBe(0);
  });

  it("ignores values that are neither seconds nor a date", () => {
    for (const value of ["-5", "soon", "", "1e3", "Someday"]) expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  it("reads retry-after-ms as milliseconds and ignores junk", () => {
    expect(parseRetryAfterMs("1500.5")).toBe(1500.5);
    expect(parseRetryAfterMs("-1")).toBeUndefined();
    expect(parseRetryAfterMs("fast")).toBeUndefined();
  });

  it("prefers retry-after-ms over Retry-After, from Headers or a plain record", () => {
    const headers = new Headers({ "retry-after-ms": "120", "retry-after": "3" });
    expect(retryAfterMs(headers)).toBe(120);
    expect(retryAfterMs({ "Retry-After": "3" })).toBe(3000);
    expect(retryAfterMs({ "retry-after": ["4"] })).toBe(4000);
    expect(retryAfterMs({ "retry-after-ms": "junk", "retry-after": "2" })).toBe(2000);
  });

  it("measures an HTTP date against the injected clock", () => {
    expect(retryAfterMs(new Headers({ "retry-after": "Sat, 01 Mar 2025 10:01:00 GMT" }), () => NOW)).toBe(60_000);
  });

  it("says nothing when there are no headers or no such header", () => {
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs(new Headers({ "content-type": "application/json" }))).toBeUndefined();
  });
});
