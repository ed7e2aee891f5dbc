import { describe, expect, it } from "vitest";
import { COLLECT_HEADER, collectPrompt, takeCollectBatch } from "./collect.js";

describe("collect prompt", () => {
  it("starts with the busy header, then one numbered block per queued message, in arrival order", () => {
    expect(collectPrompt(["first", "second\nwith two lines", "third"])).toBe(
      "[Queued messages while agent was busy]\n\n" +
        "---\nQueued #1\nfirst\n\n" +
        "---\nQueued #2\nsecond\nwith two lines\n\n" +
        "---\nQueued #3\nthird",
    );
    expect(COLLECT_HEADER).toBe("[Queued messages while agent was busy]");
  });

  it("keeps a single queued message's text verbatim inside its block", () => {
    expect(collectPrompt(["  spaced  "])).toBe(`${COLLECT_HEADER}\n\n---\nQueued #1\n  spaced  `);
  });
});

describe("collect batch", () => {
  it("takes every queued collect message, in arrival order, and leaves followups queued where they were", () => {
    const first = { id: "a", mode: "collect" };
    const pending = [
      { id: "b", mode: "followup" },
      { id: "c", mode: "collect" },
      { id: "d", mode: "followup" },
      { id: "e", mode: "collect" },
    ];
    expect(takeCollectBatch(first, pending).map((r) => r.id)).toEqual(["a", "c", "e"]);
    expect(pending.map((r) => r.id)).toEqual(["b", "d"]);
  });
});
