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
