// Small statistics helpers. Every metric reports medians (and p99 where asked) because a shared 2-core machine
// makes means meaningless: one descheduled sample moves the mean, not the median.

export function sorted(values) {
  return [...values].sort((a, b) => a - b);
}

/** Nearest-rank percentile (p in 0..100) of an array of numbers. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))];
}

export function median(values) {
  if (values.length === 0) return Number.NaN;
  const s = sorted(values);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function summarize(values) {
  return {
    n: values.length,
    p50: median(values),
    p99: percentile(values, 99),
    min: values.length ? Math.min(...values) : Number.NaN,
    max: values.length ? Math.max(...values) : Number.NaN,
  };
}

/** Milliseconds since an arbitrary origin, sub-microsecond resolution. */
export function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * Wall-clock milliseconds with sub-millisecond resolution, comparable between processes on one machine
 * (Date.now() only has 1 ms resolution; timeOrigin is wall-clock based).
 */
export function wallMs() {
  return performance.timeOrigin + performance.now();
}

export function round(value, digits = 2) {
  if (typeof value !== "number" || !Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
