import { describe, expect, it } from "vitest";
import { overflowPrompt, summarizeDropped } from "./overflow.js";

describe("summary of a message dropped by the queue cap", () => {
  it("is one line: newlines and runs of whitespace become single spaces", () => {
    expect(summarizeDropped("  please\n\ncheck   the\tlogs \n")).toBe("please check the logs");
  });

  it("keeps a message of exactly 160 characters whole", () => {
    const text = "a".repeat(160);
    expect(summarizeDropped(text)).toBe(text);
  });

  it("shortens a longer message to 160 characters ending in an ellipsis", () => {
    const out = summarizeDropped("b".repeat(161));
    expect(out).toHaveLength(160);
    expect(out).toBe(`${"b".repeat(157)}...`);
  });

  it("never cuts an emoji in half when shortening (no broken characters in the overflow notice)", () => {
    // the cut at 157 UTF-16 units falls between the two halves of the first emoji
    const out = summarizeDropped(`${"a".repeat(156)}${"😀".repeat(10)}`);
    expect(out.length).toBeLessThanOrEqual(160);
    expect(out.endsWith("...")).toBe(true);
    expect(out).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    expect(out).toBe(`${"a".repeat(156)}...`);
  });
});

describe("queue overflow notice", () => {
  it("says how many messages were dropped and lists one summary line each", () => {
    expect(overflowPrompt(["first one", "second one"], 2)).toBe(
      "[Queue overflow] Dropped 2 messages due to cap.\n- first one\n- second one",
    );
  });

  it("is only the header line when no summaries were kept", () => {
    expect(overflowPrompt([], 3)).toBe("[Queue overflow] Dropped 3 messages due to cap.");
  });
});
