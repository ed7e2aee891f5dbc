import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../providers/types.js";
import { splitForCompaction } from "./compaction-split.js";
import { call, conversation, result, said, user } from "./test-helpers.js";
import { estimateMessagesTokens } from "./token-estimate.js";

describe("splitForCompaction", () => {
  it("keeps the most recent messages that fit and summarizes the older ones", () => {
    const messages = conversation(10, 100); // 20 messages of 104 tokens
    const split = splitForCompaction(messages, 500);
    expect(split.kept).toHaveLength(4);
    expect(split.firstKeptIndex).toBe(16);
    expect(split.toSummarize).toEqual(messages.slice(0, 16));
    expect(estimateMessagesTokens(split.kept)).toBeLessThanOrEqual(500);
  });

  it("never separates a tool call from its results", () => {
    const messages: ChatMessage[] = [
      user("q1"),
      said("a1"),
      user("fix the bug"),
      call("c1", "read", { path: "a.ts" }),
      result("c1", "r".repeat(400)),
      call("c2", "read", { path: "b.ts" }),
      result("c2", "r".repeat(400)),
    ];
    // 150 tokens hold the last call with its result, plus the previous result but not that result's call
    const split = splitForCompaction(messages, 150);
    expect(split.kept[0]).toEqual(messages[5]);
    expect(split.kept).toHaveLength(2);
    for (let budget = 0; budget < 700; budget += 7) {
      expect(splitForCompaction(messages, budget).kept[0].role).not.toBe("toolResult");
    }
  });

  it("when the latest step alone is bigger than the keep budget, keeps that step anyway", () => {
    const messages: ChatMessage[] = [
      user("q1"),
      said("a1"),
      user("q2"),
      call("c1", "read", { path: "x" }),
      result("c1", "r".repeat(40_000)),
    ];
    const split = splitForCompaction(messages, 1_000);
    expect(split.firstKeptIndex).toBe(3);
    expect(split.kept.map((m) => m.role)).toEqual(["assistant", "toolResult"]);
  });

  it("summarizes at least the first message even when everything would fit the keep budget", () => {
    const messages = conversation(2, 10);
    const split = splitForCompaction(messages, 100_000);
    expect(split.toSummarize).toEqual([messages[0]]);
    expect(split.kept).toEqual(messages.slice(1));
  });

  it("has nothing to compact when the history is one message, or one call with its results", () => {
    expect(splitForCompaction([user("x".repeat(4_000))], 10).toSummarize).toEqual([]);
    const lone = [call("c1", "read", {}), result("c1", "a"), result("c1", "b")];
    expect(splitForCompaction(lone, 1)).toEqual({ toSummarize: [], kept: lone, firstKeptIndex: 0 });
    expect(splitForCompaction([], 10)).toEqual({ toSummarize: [], kept: [], firstKeptIndex: 0 });
  });
});
