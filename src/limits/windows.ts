/**
 * Budget windows as time ranges: a calendar `day` or `month` in the configured IANA time zone (limits.timeZone), or
 * the last `rollingHours`. Computed with Intl, so daylight-saving changes move a day's start with the wall clock.
 */
export type WindowSpec = "day" | "month" | { rollingHours: number };

export interface TimeRange {
  start: number;
  /** when the window's spend is forgotten: the next day or month, or (rolling) when the oldest spend leaves it */
  end: number;
}

const HOUR_MS = 60 * 60 * 1000;

/** The wall-clock fields of `at` in `timeZone`. */
function wallClock(
  at: number,
  timeZone: string,
): { y: number; m: number; d: number; h: number; min: number; s: number } {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  }).formatToParts(new Date(at));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return { y: get("year"), m: get("month"), d: get("day"), h: get("hour"), min: get("minute"), s: get("second") };
}

/** How far `timeZone`'s wall clock is ahead of UTC at `at`, in ms. */
function offsetAt(at: number, timeZone: string): number {
  const w = wallClock(at, timeZone);
  return Date.UTC(w.y, w.m - 1, w.d, w.h, w.min, w.s) - Math.floor(at / 1000) * 1000;
}

/** The instant the wall clock in `timeZone` reads y-m-d 00:00 (m may overflow: Date.UTC carries it into the year). */
function localMidnight(y: number, m: number, d: number, timeZone: string): number {
  const guess = Date.UTC(y, m - 1, d);
  // the offset at the guess, then at the corrected instant: right also when midnight is near a DST change
  const first = guess - offsetAt(guess, timeZone);
  return guess - offsetAt(first, timeZone);
}

export function windowRange(window: WindowSpec, now: number, timeZone: string): TimeRange {
  if (typeof window === "object") {
    const span = window.rollingHours * HOUR_MS;
    return { start: now - span, end: now + span };
  }
  const w = wallClock(now, timeZone);
  if (window === "day") {
    return { start: localMidnight(w.y, w.m, w.d, timeZone), end: localMidnight(w.y, w.m, w.d + 1, timeZone) };
  }
  return { start: localMidnight(w.y, w.m, 1, timeZone), end: localMidnight(w.y, w.m + 1, 1, timeZone) };
}

/** A window's name in messages: "day", "month", "24h rolling". */
export function windowName(window: WindowSpec | "run"): string {
  return typeof window === "object" ? `${window.rollingHours}h rolling` : window;
}
