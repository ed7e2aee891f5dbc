import { describe, expect, it } from "vitest";
import {
  COLLECT_HEADER,
  collectPrompt,
  isQueueMode,
  overflowPrompt,
  resolveQueueMode,
  summarizeDropped,
} from "./queue-policy.js";

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

describe("queue mode names", () => {
  it("accepts exactly steer, followup, collect and interrupt", () => {
    for (const m of ["steer", "followup", "collect", "interrupt"]) expect(isQueueMode(m)).toBe(true);
    for (const m of ["Steer", "queue", "", "followUp", undefined, null, 1, {}]) expect(isQueueMode(m)).toBe(false);
  });
});

describe("which queue mode a message gets", () => {
  const byChannel = { telegram: "collect", discord: "interrupt" } as const;

  it("per-message mode wins over everything", () => {
    expect(
      resolveQueueMode({ message: "followup", session: "collect", channel: "telegram", byChannel, global: "steer" }),
    ).toBe("followup");
  });

  it("then the session setting, over the channel and the global mode", () => {
    expect(resolveQueueMode({ session: "interrupt", channel: "telegram", byChannel, global: "steer" })).toBe(
      "interrupt",
    );
  });

  it("then the channel's setting, over the global mode", () => {
    expect(resolveQueueMode({ channel: "telegram", byChannel, global: "steer" })).toBe("collect");
    expect(resolveQueueMode({ channel: "discord", byChannel, global: "steer" })).toBe("interrupt");
  });

  it("then the global mode, for a channel without a setting or no channel at all", () => {
    expect(resolveQueueMode({ channel: "slack", byChannel, global: "followup" })).toBe("followup");
    expect(resolveQueueMode({ byChannel, global: "collect" })).toBe("collect");
  });

  it("skips a level whose value is not a queue mode instead of failing or picking it", () => {
    expect(resolveQueueMode({ session: "bogus", channel: "telegram", byChannel, global: "steer" })).toBe("collect");
    expect(resolveQueueMode({ message: "", session: "followup", byChannel, global: "steer" })).toBe("followup");
  });

  it("does not treat built-in object keys as channel names", () => {
    for (const channel of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      expect(resolveQueueMode({ channel, byChannel: {}, global: "steer" })).toBe("steer");
    }
  });
});
