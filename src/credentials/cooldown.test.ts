import { describe, expect, it } from "vitest";
import { ProviderError } from "../providers/types.js";
import { authFailureReason, type CooldownSettings, failureEffect } from "./cooldown.js";

const HOUR = 3_600_000;
const settings: CooldownSettings = { billingBackoffMs: 5 * HOUR, billingMaxMs: 24 * HOUR, failureWindowMs: 24 * HOUR };
const NOW = 1_000_000_000;

describe("auth profile cooldowns", () => {
  it("a rate limit cools (profile, model) as long as the provider said, else 30 s doubling to 5 min, jittered down", () => {
    const base = { reason: "rate_limit" as const, now: NOW, settings };
    expect(failureEffect({ ...base, resetAfterMs: 30_000, random: () => 0.5 })).toEqual({
      scope: "model",
      until: NOW + 30_000,
      errorCount: 1,
    });
    // no header: the ladder, between 90% and 100% of each step
    const ladder = [1, 2, 3, 4, 5, 6].map(
      (n) =>
        failureEffect({ ...base, previous: { errorCount: n - 1, lastFailureAt: NOW - 1000 }, random: () => 1 }).until -
        NOW,
    );
    expect(ladder).toEqual([30_000, 60_000, 120_000, 240_000, 300_000, 300_000]);
    expect(failureEffect({ ...base, random: () => 0 }).until - NOW).toBe(27_000);
  });

  it("billing disables for billingBackoffHours, doubling up to billingMaxHours; failures older than failureWindowHours start the ladder over", () => {
    const base = { reason: "billing" as const, now: NOW, random: () => 0.5 };
    const first = failureEffect({ ...base, settings });
    expect(first).toEqual({ scope: "profile", until: NOW + 5 * HOUR, errorCount: 1 });
    const third = failureEffect({ ...base, settings, previous: { errorCount: 2, lastFailureAt: NOW - HOUR } });
    expect(third).toEqual({ scope: "profile", until: NOW + 20 * HOUR, errorCount: 3 });
    const capped = failureEffect({ ...base, settings, previous: { errorCount: 5, lastFailureAt: NOW - HOUR } });
    expect(capped.until).toBe(NOW + 24 * HOUR);
    const forgotten = failureEffect({ ...base, settings, previous: { errorCount: 5, lastFailureAt: NOW - 25 * HOUR } });
    expect(forgotten).toEqual({ scope: "profile", until: NOW + 5 * HOUR, errorCount: 1 });
    const custom = { billingBackoffMs: 1 * HOUR, billingMaxMs: 2 * HOUR, failureWindowMs: HOUR };
    expect(
      failureEffect({ ...base, settings: custom, previous: { errorCount: 3, lastFailureAt: NOW - 1000 } }).until,
    ).toBe(NOW + 2 * HOUR);
    expect(
      failureEffect({ ...base, settings: custom, previous: { errorCount: 3, lastFailureAt: NOW - 2 * HOUR } }).until,
    ).toBe(NOW + HOUR);
  });

  it("a refused key (auth) disables the whole profile; other failures are not the key's fault", () => {
    expect(failureEffect({ reason: "auth", now: NOW, random: () => 0.5, settings }).scope).toBe("profile");
    expect(authFailureReason(new ProviderError("rate_limit", "x"))).toBe("rate_limit");
    expect(authFailureReason(new ProviderError("billing", "x"))).toBe("billing");
    expect(authFailureReason(new ProviderError("auth", "x"))).toBe("auth");
    for (const kind of ["server", "network", "timeout", "bad_request", "context_length"] as const) {
      expect(authFailureReason(new ProviderError(kind, "x"))).toBeUndefined();
    }
    expect(authFailureReason(new Error("x"))).toBeUndefined();
  });
});
