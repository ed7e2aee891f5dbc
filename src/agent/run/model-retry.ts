/**
 * Model retries (SPEC 16): whether a failed model call is tried again on the same model, after how long, and the
 * wait itself, which the run's abort signal (cancel or run timeout) cuts short.
 *
 * Decisions made here:
 * - Only what ProviderError marks `retryable` is retried: 429, 5xx and overload, and a connection lost before any
 *   output. Timeouts, auth, unknown models and mid-answer disconnects go straight to the fallback chain.
 * - Backoff is exponential with *equal* jitter: half the step is fixed, half random. Full jitter spreads clients a
 *   little better but can pick a wait of a few ms, and a 429 retried after 3 ms is a wasted request; a gateway has
 *   few clients per provider, so a guaranteed minimum wait is worth more than the last bit of spreading.
 * - A server's Retry-After / retry-after-ms is honoured exactly (no jitter, never shorter: coming back early only
 *   earns another 429). If it asks for more than `maxMs`, the model is not retried at all: the run falls back to the
 *   next model instead of sitting idle for longer than the operator allowed.
 */
import type { Clock } from "../../infra/clock.js";
import { ProviderError, type ProviderErrorKind } from "../../providers/types.js";

export interface RetryPolicy {
  /** retries after the first try (0 = never retry) */
  attempts: number;
  /** the first backoff step; each further retry doubles it */
  baseMs: number;
  /** no backoff step is longer, and a server asking for longer is not waited for */
  maxMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = { attempts: 3, baseMs: 500, maxMs: 30_000 };

/** `models.providers.<id>.retry` with the defaults filled in. */
export function retryPolicyFor(config: Partial<RetryPolicy> | undefined): RetryPolicy {
  return { ...DEFAULT_RETRY_POLICY, ...definedOnly(config ?? {}) };
}

/** The kinds that are retried; used as the `reason` of the lifecycle retry event. */
export type RetryReason = Extract<ProviderErrorKind, "rate_limit" | "server" | "network">;

/** Why a failure is not retried on the same model. */
export type NoRetryReason = "not_retryable" | "retries_exhausted" | "retry_after_exceeds_max";

export type RetryDecision =
  | { retry: true; delayMs: number; reason: RetryReason }
  | { retry: false; reason: NoRetryReason };

/**
 * Decide about retry number `attempt` (1 for the first retry) after `err`. `random` returns [0, 1) and is injected so
 * tests can pin the jitter.
 */
export function retryDecision(
  err: unknown,
  attempt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): RetryDecision {
  if (!(err instanceof ProviderError) || !err.retryable) return { retry: false, reason: "not_retryable" };
  if (attempt > policy.attempts) return { retry: false, reason: "retries_exhausted" };
  const reason = err.kind as RetryReason;
  if (err.retryAfterMs !== undefined) {
    if (err.retryAfterMs > policy.maxMs) return { retry: false, reason: "retry_after_exceeds_max" };
    return { retry: true, delayMs: Math.ceil(err.retryAfterMs), reason };
  }
  return { retry: true, delayMs: backoffMs(attempt, policy, random), reason };
}

/** Equal jitter: between half and all of min(maxMs, baseMs · 2^(attempt−1)). */
export function backoffMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(step / 2 + random() * (step / 2));
}

export type RetryTimers = Pick<Clock, "setTimeout" | "clearTimeout">;

// Referenced timers on purpose: `systemClock` unrefs its timers, and a CLI run whose only pending work is a backoff
// would then exit in the middle of it.
const realTimers: RetryTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Wait `ms`, or reject with an `aborted` ProviderError the moment `signal` fires (cancel or run timeout). */
export function sleepUnlessAborted(ms: number, signal: AbortSignal, timers: RetryTimers = realTimers): Promise<void> {
  if (signal.aborted) return Promise.reject(abortedDuringBackoff(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      timers.clearTimeout(handle);
      reject(abortedDuringBackoff(signal));
    };
    const handle = timers.setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function abortedDuringBackoff(signal: AbortSignal): ProviderError {
  return new ProviderError("aborted", "the run was aborted while waiting to retry the model", {
    cause: signal.reason,
  });
}

/** What the run turns into the lifecycle event `{phase:"retry", attempt, delayMs, reason}` (and a buffer reset). */
export interface RetryNotice {
  /** 1 for the first retry */
  attempt: number;
  delayMs: number;
  reason: RetryReason;
  /** the failure being retried; `error.afterOutput` says whether shown output must be reset */
  error: ProviderError;
}

export interface ModelRetryOptions<T> {
  /** one model call; `attempt` is 0 for the first try, n for the n-th retry */
  call: (attempt: number) => Promise<T>;
  policy: RetryPolicy;
  signal: AbortSignal;
  /** awaited before each wait */
  onRetry?: (notice: RetryNotice) => void | Promise<void>;
  /** default: sleepUnlessAborted with real timers */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
}

/**
 * Run `call`, retrying per `policy`. When it gives up, the last error is rethrown unchanged (so its kind still
 * drives fallback and the chat error kind); an abort during a wait rejects with an `aborted` ProviderError.
 */
export async function withModelRetries<T>(opts: ModelRetryOptions<T>): Promise<T> {
  const sleep = opts.sleep ?? sleepUnlessAborted;
  for (let attempt = 1; ; attempt++) {
    try {
      return await opts.call(attempt - 1);
    } catch (err) {
      // whatever a cancelled call threw is fallout of the cancel, never a reason to try again
      if (opts.signal.aborted) throw err;
      const decision = retryDecision(err, attempt, opts.policy, opts.random);
      if (!decision.retry) throw err;
      const { delayMs, reason } = decision;
      await opts.onRetry?.({ attempt, delayMs, reason, error: err as ProviderError });
      await sleep(delayMs, opts.signal);
    }
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
