import { describe, expect, it } from "vitest";
import { windowRange } from "./windows.js";

describe("budget windows", () => {
  it("a day in UTC runs from midnight to midnight", () => {
    const now = Date.UTC(2026, 11, 5, 13, 30);
    expect(windowRange("day", now, "UTC")).toEqual({ start: Date.UTC(2026, 11, 5), end: Date.UTC(2026, 11, 6) });
  });

  it("a day in New York starts at local midnight (05:00 UTC in winter), also just after UTC midnight", () => {
    const now = Date.UTC(2026, 11, 6, 2, 0); // still Dec 5th in New York
    expect(windowRange("day", now, "America/New_York")).toEqual({
      start: Date.UTC(2026, 11, 5, 5),
      end: Date.UTC(2026, 11, 6, 5),
    });
  });

  it("the day of a daylight-saving change is 23 hours long in Berlin", () => {
    const now = Date.UTC(2026, 2, 29, 12); // Sunday March 29th 2026: clocks go forward
    const r = windowRange("day", now, "Europe/Berlin");
    expect(r.start).toBe(Date.UTC(2026, 2, 28, 23));
    expect(r.end - r.start).toBe(23 * 3600_000);
  });

  it("a month in Tokyo starts on the 1st at local midnight; December rolls into January", () => {
    const now = Date.UTC(2026, 11, 20);
    expect(windowRange("month", now, "Asia/Tokyo")).toEqual({
      start: Date.UTC(2026, 10, 30, 15),
      end: Date.UTC(2026, 11, 31, 15),
    });
  });

  it("a rolling window reaches back its hours from now", () => {
    expect(windowRange({ rollingHours: 2 }, 10 * 3600_000, "UTC").start).toBe(8 * 3600_000);
  });
});
