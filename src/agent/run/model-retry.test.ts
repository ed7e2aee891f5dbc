import { describe, expect, it } from "vitest";
import { ProviderError, type ProviderErrorOptions } from "../../providers/types.js";
import {
  backoffMs,
  DEFAULT_RETRY_POLICY,
  type RetryNotice,
  type RetryTimers,
  retryDecision,
  retryPolicyFor,
  sleepUnlessAborted,
  withModelRetries,
} from "./model-retry.js";

const policy = { attempts: 3, baseMs: 500, maxMs: 30_000 };
const rateLimited = (opts: ProviderErrorOptions = {}) =>
  new ProviderError("rate_limit", "openai: 429 rate limited: slow down", { status: 429, ...opts });

/** Timers that fire only when the test says so. */
class ManualTimers implements RetryTimers {
  readonly pending = new Map<number, { ms: number; fn: () => void }>();
  private nextId = 1;
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { ms, fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  fireAll(): void {
    const due = [...this.pending.values()];
    this.pending.clear();
    for (const timer of due) timer.fn();
  }
}

describe("retry decision", () => {
  it("backs off exponentially with equal jitter: between half and all of each step", () => {
    expect([1, 2, 3].map((n) => backoffMs(n, policy, () => 0))).toEqual([250, 500, 1000]);
    expect([1, 2, 3].map((n) => backoffMs(n, policy, () => 0.5))).toEqual([375, 750, 1500]);
    expect([1, 2, 3].map((n) => backoffMs(n, policy, () => 0.999_999))).toEqual([500, 1000, 2000]);
  });

  it("never backs off longer than maxMs", () => {
    const capped = { attempts: 20, baseMs: 500, maxMs: 3000 };
    expect(backoffMs(10, capped, () => 0.999_999)).toBe(3000);
    expect(backoffMs(10, capped, () => 0)).toBe(1500);
  });

  it("retries rate limits, server errors and connections lost before output, naming the kind", () => {
    const overloaded = new ProviderError("server", "anthropic: 529 server error: Overloaded", { status: 529 });
    const refused = new ProviderError("network", "local: network error: fetch failed");
    expect(retryDecision(rateLimited(), 1, policy, () => 0)).toEqual({
      retry: true,
      delayMs: 250,
      reason: "rate_limit",
    });
    expect(retryDecision(overloaded, 2, policy, () => 0)).toEqual({ retry: true, delayMs: 500, reason: "server" });
    expect(retryDecision(refused, 3, policy, () => 0)).toEqual({ retry: true, delayMs: 1000, reason: "network" });
  });

  it("does not retry what another try on the same model would not fix", () => {
    const failures = [
      new ProviderError("auth", "openai: 401 authentication failed: bad key"),
      new ProviderError("model_not_found", "openai: 404 model not found: gpt-9"),
      new ProviderError("timeout", "openai: timed out: no data from the model within 120000 ms"),
      new ProviderError("network", "openai: network error: terminated", { afterOutput: true }),
      new ProviderError("context_length", "openai: 400 context length exceeded"),
      new ProviderError("aborted", "openai: aborted"),
      new Error("a bug, not a provider failure"),
    ];
    for (const err of failures) {
      expect(retryDecision(err, 1, policy, () => 0)).toEqual({ retry: false, reason: "not_retryable" });
    }
  });

  it("stops after the configured number of retries", () => {
    expect(retryDecision(rateLimited(), 3, policy).retry).toBe(true);
    expect(retryDecision(rateLimited(), 4, policy)).toEqual({ retry: false, reason: "retries_exhausted" });
    expect(retryDecision(rateLimited(), 1, { ...policy, attempts: 0 })).toEqual({
      retry: false,
      reason: "retries_exhausted",
    });
  });

  it("waits exactly as long as the server asked, rounded up, whatever the backoff step", () => {
    expect(retryDecision(rateLimited({ retryAfterMs: 1000 }), 1, policy, () => 0)).toEqual({
      retry: true,
      delayMs: 1000,
      reason: "rate_limit",
    });
    expect(retryDecision(rateLimited({ retryAfterMs: 0.4 }), 3, policy, () => 0.9)).toMatchObject({ delayMs: 1 });
  });

  it("falls back instead of waiting when the server asks for longer than maxMs", () => {
    expect(retryDecision(rateLimited({ retryAfterMs: 30_000 }), 1, policy).retry).toBe(true);
    expect(retryDecision(rateLimited({ retryAfterMs: 30_001 }), 1, policy)).toEqual({
      retry: false,
      reason: "retry_after_exceeds_max",
    });
  });

  it("fills in the default policy for what the provider config leaves out", () => {
    expect(retryPolicyFor(undefined)).toEqual({ attempts: 3, baseMs: 500, maxMs: 30_000 });
    expect(retryPolicyFor({ attempts: 1, maxMs: undefined })).toEqual({ ...DEFAULT_RETRY_POLICY, attempts: 1 });
  });
});

describe("sleepUnlessAborted", () => {
  it("resolves when the timer fires", async () => {
    const timers = new ManualTimers();
    let done = false;
    const sleeping = sleepUnlessAborted(1500, new AbortController().signal, timers).then(() => {
      done = true;
    });
    expect([...timers.pending.values()].map((t) => t.ms)).toEqual([1500]);
    await Promise.resolve();
    expect(done).toBe(false);
    timers.fireAll();
    await sleeping;
    expect(done).toBe(true);
  });

  it("rejects as aborted the moment the signal fires, and drops its timer", async () => {
    const timers = new ManualTimers();
    const controller = new AbortController();
    const sleeping = sleepUnlessAborted(30_000, controller.signal, timers);
    controller.abort(new Error("run timeout"));
    await expect(sleeping).rejects.toMatchObject({ kind: "aborted" });
    expect(timers.pending.size).toBe(0);
  });

  it("does not start waiting when the run is already aborted", async () => {
    const timers = new ManualTimers();
    await expect(sleepUnlessAborted(500, AbortSignal.abort(), timers)).rejects.toBeInstanceOf(ProviderError);
    expect(timers.pending.size).toBe(0);
  });
});

describe("withModelRetries", () => {
  function flaky<T>(failures: unknown[], result: T) {
    const attempts: number[] = [];
    const call = async (attempt: number) => {
      attempts.push(attempt);
      const failure = failures.shift();
      if (failure) throw failure;
      return result;
    };
    return { call, attempts };
  }

  it("answers after retrying two rate limits, announcing each retry before its wait", async () => {
    const { call, attempts } = flaky([rateLimited(), rateLimited({ retryAfterMs: 2000 })], "ok");
    const log: string[] = [];
    const result = await withModelRetries({
      call,
      policy,
      signal: new AbortController().signal,
      random: () => 0,
      onRetry: (n: RetryNotice) => {
        log.push(`retry ${n.attempt} in ${n.delayMs} (${n.reason})`);
      },
      sleep: async (ms) => {
        log.push(`sleep ${ms}`);
      },
    });
    expect(result).toBe("ok");
    expect(attempts).toEqual([0, 1, 2]);
    expect(log).toEqual(["retry 1 in 250 (rate_limit)", "sleep 250", "retry 2 in 2000 (rate_limit)", "sleep 2000"]);
  });

  it("gives up after the configured retries and rethrows the last failure unchanged", async () => {
    const last = rateLimited();
    const { call, attempts } = flaky([rateLimited(), rateLimited(), rateLimited(), last], "never");
    const retries: number[] = [];
    const run = withModelRetries({
      call,
      policy,
      signal: new AbortController().signal,
      onRetry: (n) => {
        retries.push(n.attempt);
      },
      sleep: async () => {},
    });
    await expect(run).rejects.toBe(last);
    expect(attempts).toEqual([0, 1, 2, 3]);
    expect(retries).toEqual([1, 2, 3]);
  });

  it("does not retry a refused key, so the fallback chain can take over at once", async () => {
    const refused = new ProviderError("auth", "openai: 401 authentication failed: bad key", { status: 401 });
    const { call, attempts } = flaky([refused], "never");
    let retried = false;
    const run = withModelRetries({
      call,
      policy,
      signal: new AbortController().signal,
      onRetry: () => {
        retried = true;
      },
      sleep: async () => {},
    });
    await expect(run).rejects.toBe(refused);
    expect(attempts).toEqual([0]);
    expect(retried).toBe(false);
  });

  it("tells the run when a retry follows visible output, so it can reset what was shown", async () => {
    const midAnswer = new ProviderError("server", "anthropic: server error: Overloaded", { afterOutput: true });
    const { call } = flaky([midAnswer], "ok");
    const notices: RetryNotice[] = [];
    await withModelRetries({
      call,
      policy,
      signal: new AbortController().signal,
      onRetry: (n) => {
        notices.push(n);
      },
      sleep: async () => {},
    });
    expect(notices.map((n) => [n.reason, n.error.afterOutput])).toEqual([["server", true]]);
  });

  it("stops at once when the run is aborted during the backoff", async () => {
    const timers = new ManualTimers();
    const controller = new AbortController();
    const { call, attempts } = flaky([rateLimited({ retryAfterMs: 20_000 })], "never");
    let waiting: () => void = () => {};
    const backoffStarted = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    const run = withModelRetries({
      call,
      policy,
      signal: controller.signal,
      sleep: (ms, signal) => {
        const sleeping = sleepUnlessAborted(ms, signal, timers);
        waiting();
        return sleeping;
      },
    });
    await backoffStarted;
    expect([...timers.pending.values()].map((t) => t.ms)).toEqual([20_000]);
    controller.abort();
    // no timer is ever fired: the abort alone ends the wait
    await expect(run).rejects.toMatchObject({ kind: "aborted" });
    expect(attempts).toEqual([0]);
    expect(timers.pending.size).toBe(0);
  });

  it("does not retry a call that failed because the run was cancelled", async () => {
    const controller = new AbortController();
    const outage = new ProviderError("network", "openai: network error: terminated");
    const attempts: number[] = [];
    const run = withModelRetries({
      call: async (attempt) => {
        attempts.push(attempt);
        controller.abort();
        throw outage;
      },
      policy,
      signal: controller.signal,
      sleep: async () => {},
    });
    await expect(run).rejects.toBe(outage);
    expect(attempts).toEqual([0]);
  });
});
