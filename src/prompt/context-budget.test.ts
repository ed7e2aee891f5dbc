import { describe, expect, it } from "vitest";
import { checkContextFits, compactionReserve, estimateTokens } from "./context-budget.js";

describe("estimateTokens", () => {
  it("counts about four chars per token, rounding up", () => {
    expect(estimateTokens("")).toBe(0);
    expect(estimateTokens("abc")).toBe(1);
    expect(estimateTokens("abcd")).toBe(1);
    expect(estimateTokens("abcde")).toBe(2);
  });
});

describe("compactionReserve", () => {
  it("keeps 20000 tokens free on a large window", () => {
    expect(compactionReserve(200_000)).toBe(20_000);
  });

  it("never reserves more than a quarter of a small window", () => {
    expect(compactionReserve(32_000)).toBe(8_000);
    expect(compactionReserve(8_191)).toBe(2_047);
  });

  it("uses a configured reserve when it is smaller", () => {
    expect(compactionReserve(200_000, 5_000)).toBe(5_000);
  });
});

describe("checkContextFits", () => {
  it("lets a request through when it fits below window minus reserve", () => {
    expect(
      checkContextFits({
        systemPrompt: "x".repeat(400),
        messagesChars: 400,
        toolsChars: 200,
        contextWindow: 1000,
        reserveTokens: 0,
      }),
    ).toEqual({ ok: true, estimatedTokens: 250 });
  });

  it("refuses an oversized request with a message that says nothing was sent and suggests /new", () => {
    const result = checkContextFits({
      systemPrompt: "x".repeat(4_000),
      messages: [{ role: "user", content: "y".repeat(60_000) }],
      contextWindow: 16_000,
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.limit).toBe(12_000);
    expect(result.estimatedTokens).toBeGreaterThan(11_000);
    expect(result.message).toContain("Nothing was sent");
    expect(result.message).toContain("/new");
    expect(result.message).toContain(String(result.limit));
  });

  it("counts the reserve against the window", () => {
    const input = { systemPrompt: "x".repeat(3_600), contextWindow: 1_000 };
    expect(checkContextFits({ ...input, reserveTokens: 0 }).ok).toBe(true);
    expect(checkContextFits({ ...input, reserveTokens: 200 }).ok).toBe(false);
  });

  it("points at the workspace files when the system prompt alone is too big", () => {
    const result = checkContextFits({ systemPrompt: "x".repeat(40_000), contextWindow: 8_000 });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(/system prompt alone/);
  });
});
