/**
 * Per-token intake limits (SPEC 25): `gateway.auth.tokens[].limits {runsPerMinute, concurrentRuns, tokensPerDay}`,
 * else `limits.tokens`. Checked when an `agent` / `chat.send` arrives, before anything is stored: over a limit the
 * request is refused with `rate_limited` and `retryAfterMs`.
 *
 * The counters are in memory. Across gateway nodes on Postgres each node announces the runs it accepts and their
 * ends (limits/spend-relay.ts) and counts the other nodes' too, so a token is limited fleet-wide; two requests that
 * arrive on two nodes at the same moment may both pass (at most one extra run per other node). tokensPerDay reads the
 * token's spend from the budget window sums (limits/window-sums.ts), with their tolerance.
 */
import type { Clock } from "../infra/clock.js";
import { RateLimitedError } from "./errors.js";

export interface TokenRateLimits {
  runsPerMinute?: number;
  concurrentRuns?: number;
  tokensPerDay?: number;
}

const MINUTE_MS = 60_000;
/** A concurrency refusal cannot know when a run ends: the client is told to try again after this. */
export const CONCURRENCY_RETRY_MS = 1000;

export interface RateLimiterOptions {
  clock: Clock;
  /** the token's model tokens today and when the day ends (SpendControl.tokensToday) */
  tokensToday(token: string): Promise<{ tokens: number; dayEndsAt: number }>;
}

export class TokenRateLimiter {
  /** accept times within the last minute, oldest first, per token */
  private readonly accepts = new Map<string, number[]>();
  /** runs accepted and not ended, per token */
  private readonly active = new Map<string, Set<string>>();
  private readonly tokenOfRun = new Map<string, string>();

  constructor(private readonly opts: RateLimiterOptions) {}

  /** Throws RateLimitedError when `token` is over one of `limits` now; `key` names the config that set them. */
  async check(token: string, limits: TokenRateLimits, key: string): Promise<void> {
    const now = this.opts.clock.now();
    if (limits.runsPerMinute !== undefined) {
      const recent = this.recentAccepts(token, now);
      if (recent.length >= limits.runsPerMinute) {
        const retryAfterMs = Math.max(1, recent[recent.length - limits.runsPerMinute] + MINUTE_MS - now);
        throw new RateLimitedError(
          `token ${token} started ${recent.length} runs in the last minute (${key}.runsPerMinute is ${limits.runsPerMinute}); retry in ${Math.ceil(retryAfterMs / 1000)} s`,
          retryAfterMs,
          "runsPerMinute",
        );
      }
    }
    if (limits.concurrentRuns !== undefined) {
      const running = this.active.get(token)?.size ?? 0;
      if (running >= limits.concurrentRuns) {
        throw new RateLimitedError(
          `token ${token} has ${running} runs queued or running (${key}.concurrentRuns is ${limits.concurrentRuns}); retry when one ends`,
          CONCURRENCY_RETRY_MS,
          "concurrentRuns",
        );
      }
    }
    if (limits.tokensPerDay !== undefined) {
      const today = await this.opts.tokensToday(token);
      if (today.tokens >= limits.tokensPerDay) {
        const retryAfterMs = Math.max(1, today.dayEndsAt - now);
        throw new RateLimitedError(
          `token ${token} used ${today.tokens.toLocaleString("en-US")} model tokens today (${key}.tokensPerDay is ${limits.tokensPerDay.toLocaleString("en-US")}); the day ends in ${Math.ceil(retryAfterMs / 60_000)} min`,
          retryAfterMs,
          "tokensPerDay",
        );
      }
    }
  }

  /** A run was accepted for `token` (here, or on another node): it counts until `ended`. */
  accepted(token: string, runId: string, at: number): void {
    const times = this.recentAccepts(token, at);
    times.push(at);
    this.accepts.set(token, times);
    const set = this.active.get(token) ?? new Set<string>();
    this.active.set(token, set);
    set.add(runId);
    this.tokenOfRun.set(runId, token);
  }

  ended(runId: string): void {
    const token = this.tokenOfRun.get(runId);
    if (token === undefined) return;
    this.tokenOfRun.delete(runId);
    const set = this.active.get(token);
    set?.delete(runId);
    if (set?.size === 0) this.active.delete(token);
  }

  private recentAccepts(token: string, now: number): number[] {
    const times = (this.accepts.get(token) ?? []).filter((t) => t > now - MINUTE_MS);
    if (times.length === 0) this.accepts.delete(token);
    else this.accepts.set(token, times);
    return times;
  }
}
