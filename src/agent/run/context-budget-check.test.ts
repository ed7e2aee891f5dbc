import { describe, expect, it } from "vitest";
import {
  compactionReserve,
  contextBudget,
  keepRecentBudget,
  needsCompaction,
  oversizedMessageLimit,
  summaryMaxTokens,
} from "./context-budget-check.js";

describe("needsCompaction", () => {
  it("compacts once the projected request reaches the window minus the reserve, not before", () => {
    const reserve = compactionReserve(200_000);
    expect(reserve).toBe(20_000);
    expect(needsCompaction(179_999, 200_000, reserve)).toBe(false);
    expect(needsCompaction(180_000, 200_000, reserve)).toBe(true);
  });

  it("on a small window the reserve is a quarter of it", () => {
    const reserve = compactionReserve(8_000);
    expect(reserve).toBe(2_000);
    expect(needsCompaction(5_999, 8_000, reserve)).toBe(false);
    expect(needsCompaction(6_000, 8_000, reserve)).toBe(true);
  });
});

describe("keepRecentBudget", () => {
  it("keeps the configured amount of recent history on a large window", () => {
    expect(keepRecentBudget(200_000)).toBe(20_000);
    expect(keepRecentBudget(200_000, 5_000)).toBe(5_000);
  });

  it("keeps at most a quarter of a small window, so the reserve and the kept part leave half for the rest", () => {
    expect(keepRecentBudget(4_000)).toBe(1_000);
    const window = 4_000;
    const left = contextBudget(window, compactionReserve(window)) - keepRecentBudget(window);
    expect(left).toBe(2_000);
  });
});

describe("limits derived from the budget", () => {
  it("a single message may use at most half of the budget", () => {
    expect(oversizedMessageLimit(200_000, 20_000)).toBe(90_000);
    expect(oversizedMessageLimit(4_000, 1_000)).toBe(1_500);
  });

  it("the summary may use most of the reserve, never less than a short paragraph", () => {
    expect(summaryMaxTokens(20_000)).toBe(16_000);
    expect(summaryMaxTokens(100)).toBe(256);
  });
});
