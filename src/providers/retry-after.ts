/**
 * How long a server asked us to wait before trying again, from the headers of its error response (SPEC 16).
 *
 * `retry-after-ms` (OpenAI, Azure: milliseconds, may be fractional) is the more precise of the two and wins;
 * `Retry-After` is either delay-seconds or an HTTP date (RFC 9110 §10.2.3). Values that are not one of those, or
 * that are negative, are ignored rather than guessed at: the retry policy then falls back to its own backoff.
 */

/** A web `Headers` (what fetch and both SDKs' APIError carry) or a plain header record. */
export type HeaderSource = { get(name: string): string | null } | Record<string, unknown>;

export function retryAfterMs(headers: HeaderSource | undefined, now: () => number = Date.now): number | undefined {
  if (!headers) return undefined;
  const ms = parseRetryAfterMs(header(headers, "retry-after-ms"));
  if (ms !== undefined) return ms;
  return parseRetryAfter(header(headers, "retry-after"), now());
}

/** `retry-after-ms: 1500.5` → 1500.5 */
export function parseRetryAfterMs(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  return Number(value);
}

/** `Retry-After: 2` → 2000; `Retry-After: Wed, 21 Oct 2015 07:28:00 GMT` → ms from `nowMs` to then (0 if past). */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  // a date must at least name a weekday or month, so that "-5" or "soon" are not read as dates by Date.parse
  if (!/[a-z]{3}/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/**
 * How long the limit a failed request hit lasts (SPEC 23), for an auth profile's cooldown: what `retryAfterMs` reads
 * when the server said it, else the providers' rate-limit reset headers. OpenAI sends `x-ratelimit-reset-requests` /
 * `x-ratelimit-reset-tokens` as durations ("6m0s", "1s", "20ms"); Anthropic sends
 * `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset` as RFC 3339 times. Of the buckets whose
 * `remaining` header says 0 (the one that was hit), the longest reset counts; when none says, the longest of all.
 */
export function resetAfterMs(headers: HeaderSource | undefined, now: () => number = Date.now): number | undefined {
  if (!headers) return undefined;
  const direct = retryAfterMs(headers, now);
  if (direct !== undefined) return direct;
  const buckets: Array<{ resetMs: number; exhausted: boolean }> = [];
  for (const bucket of ["requests", "tokens"]) {
    const resetMs = parseDuration(header(headers, `x-ratelimit-reset-${bucket}`));
    if (resetMs !== undefined) {
      buckets.push({ resetMs, exhausted: header(headers, `x-ratelimit-remaining-${bucket}`)?.trim() === "0" });
    }
  }
  for (const bucket of ["requests", "tokens", "input-tokens", "output-tokens"]) {
    const resetMs = parseResetTime(header(headers, `anthropic-ratelimit-${bucket}-reset`), now());
    if (resetMs !== undefined) {
      const remaining = header(headers, `anthropic-ratelimit-${bucket}-remaining`);
      buckets.push({ resetMs, exhausted: remaining?.trim() === "0" });
    }
  }
  if (buckets.length === 0) return undefined;
  const hit = buckets.some((b) => b.exhausted) ? buckets.filter((b) => b.exhausted) : buckets;
  return Math.max(...hit.map((b) => b.resetMs));
}

/** OpenAI's reset durations: "6m0s" → 360000, "1s" → 1000, "20ms" → 20, "1h2m3.5s"; anything else → undefined */
export function parseDuration(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (!/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(text)) return undefined;
  const unitMs: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  let total = 0;
  for (const [, amount, , unit] of text.matchAll(/(\d+(\.\d+)?)(h|ms|m|s)/g)) total += Number(amount) * unitMs[unit];
  return total;
}

/** An RFC 3339 time ("2026-01-05T10:00:30Z") → ms from `nowMs` to then (0 if past); anything else → undefined */
export function parseResetTime(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value.trim())) {
    return undefined;
  }
  const at = Date.parse(value.trim());
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === "function") {
    const value = (headers as { get(name: string): string | null }).get(name);
    return value ?? undefined;
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === "string") return value;
    if (Array.isArray(value) && typeof value[0] === "string") return value[0];
  }
  return undefined;
}
