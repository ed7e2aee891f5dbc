import { describe, expect, it } from "vitest";
import {
  parseDuration,
  parseResetTime,
  parseRetryAfter,
  parseRetryAfterMs,
  resetAfterMs,
  retryAfterMs,
} from "./retry-after.js";

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

describe("rate-limit reset headers (an auth profile's cooldown)", () => {
  it("reads OpenAI's reset durations", () => {
    expect(parseDuration("6m0s")).toBe(360_000);
    expect(parseDuration("1s")).toBe(1000);
    expect(parseDuration("20ms")).toBe(20);
    expect(parseDuration("1h2m3.5s")).toBe(3_723_500);
    for (const value of ["", "6", "soon", "1d", "-1s"]) expect(parseDuration(value)).toBeUndefined();
  });

  it("reads Anthropic's RFC 3339 reset times relative to now, never negative", () => {
    expect(parseResetTime("2025-03-01T10:00:30Z", NOW)).toBe(30_000);
    expect(parseResetTime("2025-03-01T11:00:30+01:00", NOW)).toBe(30_000);
    expect(parseResetTime("2025-03-01T09:00:00Z", NOW)).toBe(0);
    expect(parseResetTime("Sat, 01 Mar 2025 10:00:05 GMT", NOW)).toBeUndefined();
  });

  it("Retry-After wins; else the exhausted bucket's reset, else the longest", () => {
    const now = () => NOW;
    expect(resetAfterMs({ "retry-after": "30", "x-ratelimit-reset-tokens": "6m0s" }, now)).toBe(30_000);
    expect(
      resetAfterMs(
        {
          "x-ratelimit-reset-requests": "1s",
          "x-ratelimit-remaining-requests": "0",
          "x-ratelimit-reset-tokens": "6m0s",
          "x-ratelimit-remaining-tokens": "5000",
        },
        now,
      ),
    ).toBe(1000);
    expect(resetAfterMs({ "x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "20ms" }, now)).toBe(1000);
    expect(
      resetAfterMs(
        {
          "anthropic-ratelimit-requests-reset": "2025-03-01T10:00:05Z",
          "anthropic-ratelimit-tokens-reset": "2025-03-01T10:01:00Z",
          "anthropic-ratelimit-tokens-remaining": "0",
        },
        now,
      ),
    ).toBe(60_000);
    expect(resetAfterMs({ "content-type": "application/json" }, now)).toBeUndefined();
  });
});
