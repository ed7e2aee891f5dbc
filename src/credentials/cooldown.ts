/**
 * What a failed call does to an auth profile (SPEC 23), as pure functions of the failure, the profile's previous
 * failures, the time and a random number (both injected).
 *
 * - rate_limit cools `(profile, model)`: a sibling model of the same key stays usable. The wait is the provider's own
 *   (`ProviderError.resetAfterMs`: Retry-After, retry-after-ms, x-ratelimit-reset-*, anthropic-ratelimit-*-reset);
 *   without one, 30 s doubling per consecutive failure up to 5 min, jittered down by up to 10% so that keys cooled
 *   together do not all come back in the same millisecond (never longer than the ladder's step).
 * - billing (out of credit) disables the whole profile: auth.cooldowns.billingBackoffHours (5 h), doubling per
 *   consecutive failure up to billingMaxHours (24 h).
 * - auth (401/403: a revoked or wrong key) disables the whole profile on the same ladder as billing: it does not
 *   heal by waiting; `loopgate models auth clear <id>` ends it once the key is fixed.
 * Consecutive means within failureWindowHours of the previous failure; older failures are forgotten.
 */
import { ProviderError } from "../providers/types.js";

export type AuthFailureReason = "rate_limit" | "billing" | "auth";

export interface CooldownSettings {
  billingBackoffMs: number;
  billingMaxMs: number;
  failureWindowMs: number;
}

export const RATE_LIMIT_BASE_MS = 30_000;
export const RATE_LIMIT_MAX_MS = 5 * 60_000;

/** The failures that move a call to another profile of the same provider; anything else is not the key's fault. */
export function authFailureReason(err: unknown): AuthFailureReason | undefined {
  if (!(err instanceof ProviderError)) return undefined;
  if (err.kind === "rate_limit" || err.kind === "billing" || err.kind === "auth") return err.kind;
  return undefined;
}

export interface FailureEffect {
  /** "model": the (profile, model) row cools down; "profile": the profile's "" row is disabled */
  scope: "model" | "profile";
  until: number;
  errorCount: number;
}

export function failureEffect(input: {
  reason: AuthFailureReason;
  /** the provider's own reset time, when it said */
  resetAfterMs?: number;
  previous?: { errorCount: number; lastFailureAt?: number };
  now: number;
  random: () => number;
  settings: CooldownSettings;
}): FailureEffect {
  const { reason, previous, now, settings } = input;
  const recent = previous?.lastFailureAt !== undefined && now - previous.lastFailureAt <= settings.failureWindowMs;
  const errorCount = (recent ? previous.errorCount : 0) + 1;
  if (reason === "rate_limit") {
    const waitMs =
      input.resetAfterMs !== undefined && input.resetAfterMs > 0
        ? Math.ceil(input.resetAfterMs)
        : jittered(ladderMs(errorCount, RATE_LIMIT_BASE_MS, RATE_LIMIT_MAX_MS), input.random);
    return { scope: "model", until: now + waitMs, errorCount };
  }
  return {
    scope: "profile",
    until: now + ladderMs(errorCount, settings.billingBackoffMs, settings.billingMaxMs),
    errorCount,
  };
}

/** base · 2^(n−1), at most max */
export function ladderMs(errorCount: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(errorCount - 1, 30)));
}

function jittered(stepMs: number, random: () => number): number {
  return Math.round(stepMs * (0.9 + 0.1 * random()));
}
