import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../providers/types.js";
import { type CompactContextInput, type CompactionResult, compactContext } from "./compaction.js";
import { SUMMARY_PREFIX, summaryMessage } from "./compaction-summary.js";
import { compactionReserve } from "./context-budget-check.js";
import { call, conversation, fakeSummarizer, promptText, result, user } from "./test-helpers.js";
import { estimateContextTokens, estimateMessagesTokens } from "./token-estimate.js";

const signal = new AbortController().signal;

function input(messages: ChatMessage[], overrides: Partial<CompactContextInput> = {}): CompactContextInput {
  const window = overrides.window ?? 8_000;
  return {
    messages,
    system: "You are a helpful assistant.",
    window,
    reserve: compactionReserve(window),
    summarize: fakeSummarizer(() => "the user asked many questions").summarize,
    attemptsSoFar: 0,
    reason: "threshold",
    signal,
    ...overrides,
  };
}

function expectOutcome<O extends CompactionResult["outcome"]>(
  r: CompactionResult,
  outcome: O,
): Extract<CompactionResult, { outcome: O }> {
  expect(r.outcome).toBe(outcome);
  return r as Extract<CompactionResult, { outcome: O }>;
}

describe("compactContext", () => {
  it("replaces the oldest turns with a summary and keeps the recent ones word for word, under budget", async () => {
    const messages = conversation(30, 100); // about 6,240 tokens against a budget of 6,000
    const fake = fakeSummarizer(() => "the user asked 30 numbered questions");
    const r = expectOutcome(await compactContext(input(messages, { summarize: fake.summarize })), "compacted");

    expect(r.summary).toBe("the user asked 30 numbered questions");
    expect(r.messages[0]).toEqual(summaryMessage("the user asked 30 numbered questions"));
    expect(r.messages.slice(1)).toEqual(messages.slice(r.firstKeptIndex));
    expect(r.summarizedCount).toBe(r.firstKeptIndex);
    expect(r.tokensBefore).toBe(estimateContextTokens(messages, "You are a helpful assistant."));
    expect(r.tokensAfter).toBeLessThan(6_000);
    expect(r.tokensAfter).toBe(estimateContextTokens(r.messages, "You are a helpful assistant."));
    expect(r).toMatchObject({ attempt: 1, summarizerCalls: 1, truncatedCount: 0 });
    // on an 8,000 window at most a quarter is kept verbatim
    expect(estimateMessagesTokens(r.messages.slice(1))).toBeLessThanOrEqual(2_000);
    // the summarizer saw the summarized part and nothing of the kept part
    const text = promptText(fake.prompts[0]);
    expect(text).toContain("User: question 1 ");
    expect(text).not.toContain("User: question 30 ");
    expect(fake.prompts[0].maxTokens).toBe(1_600);
  });

  it("builds the next summary on the previous one", async () => {
    const messages = [summaryMessage("earlier: fixed a.ts"), ...conversation(30, 100)];
    const fake = fakeSummarizer(() => "fixed a.ts, then 30 questions");
    expectOutcome(await compactContext(input(messages, { summarize: fake.summarize })), "compacted");
    const text = promptText(fake.prompts[0]);
    expect(text).toContain("<summary>\nearlier: fixed a.ts\n</summary>");
    expect(text).not.toContain(SUMMARY_PREFIX);
  });

  it("a summarizer whose summary is longer than what it summarizes ends in context_length, after one call", async () => {
    const fake = fakeSummarizer((p) => promptText(p) + promptText(p));
    const r = expectOutcome(
      await compactContext(input(conversation(30, 100), { summarize: fake.summarize })),
      "failed",
    );
    expect(fake.prompts).toHaveLength(1);
    expect(r.kind).toBe("context_length");
    expect(r.message).toMatch(
      /the summary \(about [\d,]+ tokens\) is no shorter than what it replaced \(about [\d,]+\)/,
    );
    expect(r.message).toContain("6,000 are available (8,000 minus 2,000 kept free for the reply)");
    expect(r.message).toContain("Send /new to start a fresh session.");
  });

  it("a summary that leaves the context over budget ends in context_length with the numbers", async () => {
    const system = "s".repeat(18_000); // about 4,500 tokens of system prompt
    const r = expectOutcome(await compactContext(input(conversation(10, 100), { system })), "failed");
    expect(r.tokensAfter).toBeGreaterThanOrEqual(6_000);
    expect(r.message).toContain(
      `even after compaction it is too big. It is about ${r.tokensAfter.toLocaleString("en-US")} tokens`,
    );
    expect(r.message).toContain("/new");
  });

  it("an empty summary is a failure, not a compaction that forgets the conversation", async () => {
    const r = await compactContext(input(conversation(30, 100), { summarize: async () => " \n" }));
    expect(expectOutcome(r, "failed").message).toContain("the summarizer returned no text");
  });

  it("a second compaction in the same run keeps less verbatim than the first", async () => {
    const messages = conversation(30, 100);
    const first = expectOutcome(await compactContext(input(messages)), "compacted");
    const second = expectOutcome(await compactContext(input(messages, { attemptsSoFar: 1 })), "compacted");
    expect(second.firstKeptIndex).toBeGreaterThan(first.firstKeptIndex);
    expect(estimateMessagesTokens(second.messages.slice(1))).toBeLessThanOrEqual(1_000);
  });

  it("refuses to run past the attempt limit without calling the summarizer", async () => {
    const fake = fakeSummarizer(() => "s");
    const r = expectOutcome(
      await compactContext(input(conversation(30, 100), { summarize: fake.summarize, attemptsSoFar: 3 })),
      "exhausted",
    );
    expect(fake.prompts).toHaveLength(0);
    expect(r).toMatchObject({ kind: "context_length", maxAttempts: 3, attempt: 4 });
    expect(r.message).toContain("compaction already ran 3 times in this run");
    const limited = await compactContext(input(conversation(30, 100), { maxAttempts: 1, attemptsSoFar: 1 }));
    expect(limited.outcome).toBe("exhausted");
  });

  it("cuts one huge tool result instead of summarizing around it when that alone makes the context fit", async () => {
    const fake = fakeSummarizer(() => "s");
    const messages = [user("read the log"), call("c1", "read", { path: "app.log" }), result("c1", "x".repeat(400_000))];
    const r = expectOutcome(
      await compactContext(input(messages, { window: 32_000, reason: "overflow", summarize: fake.summarize })),
      "truncated",
    );
    expect(fake.prompts).toHaveLength(0);
    expect(r.truncatedCount).toBe(1);
    expect(r.tokensAfter).toBeLessThan(24_000);
    expect(r.messages.slice(0, 2)).toEqual(messages.slice(0, 2));
    expect((r.messages[2] as { content: string }).content).toContain("characters cut from the middle");
  });

  it("cuts a huge tool result in the kept part and summarizes the older history when both are needed", async () => {
    const messages = [
      ...conversation(100, 100),
      call("c1", "read", { path: "app.log" }),
      result("c1", "x".repeat(400_000)),
    ];
    const r = expectOutcome(await compactContext(input(messages, { window: 32_000 })), "compacted");
    expect(r.truncatedCount).toBe(1);
    expect(r.firstKeptIndex).toBe(200);
    expect(r.tokensAfter).toBeLessThan(24_000);
  });

  it("on a 4,000-token window the kept part shrinks to a quarter, so compaction still fits", async () => {
    const messages = conversation(30, 50); // about 3,240 tokens against a budget of 3,000
    const r = expectOutcome(
      await compactContext(input(messages, { window: 4_000, keepRecentTokens: 20_000 })),
      "compacted",
    );
    expect(estimateMessagesTokens(r.messages.slice(1))).toBeLessThanOrEqual(1_000);
    expect(r.tokensAfter).toBeLessThan(3_000);
  });

  it("summarizes in stages when the summarizer model has a smaller window", async () => {
    const fake = fakeSummarizer((_p, n) => `stage ${n}`);
    const r = expectOutcome(
      await compactContext(input(conversation(30, 100), { summarize: fake.summarize, summarizerWindow: 4_000 })),
      "compacted",
    );
    expect(r.summarizerCalls).toBeGreaterThan(1);
    expect(r.summarizerCalls).toBe(fake.prompts.length);
    expect(r.summary).toBe(`stage ${fake.prompts.length}`);
  });

  it("has nothing to compact in a short conversation that fits", async () => {
    const fake = fakeSummarizer(() => "s");
    const r = await compactContext(input([user("hi")], { reason: "manual", summarize: fake.summarize }));
    expect(r).toEqual({ outcome: "nothing_to_compact", tokensBefore: r.tokensBefore, attempt: 1 });
    expect(fake.prompts).toHaveLength(0);
  });

  it("fails with advice when the provider refuses a context there is nothing left to shrink in", async () => {
    const r = expectOutcome(await compactContext(input([user("hi")], { reason: "overflow" })), "failed");
    expect(r.message).toContain("the provider refused it and there is no older history to summarize");
    expect(r.message).toContain("/new");
  });

  it("passes an abort of the summarizer call on to the run", async () => {
    const aborted = async () => {
      throw new DOMException("stopped", "AbortError");
    };
    await expect(compactContext(input(conversation(30, 100), { summarize: aborted }))).rejects.toThrow("stopped");
  });
});

/**
 * The attempt loop the run wraps around model calls, reduced to its compaction decisions: call the model; on a
 * context overflow compact and retry while compaction says it helped. `overflows` says whether the model refuses
 * the context it is given.
 */
async function runWithCompaction(
  history: ChatMessage[],
  overflows: (messages: ChatMessage[]) => boolean,
  summarize: CompactContextInput["summarize"],
): Promise<{ modelCalls: number; last?: CompactionResult }> {
  let messages = history;
  let attempts = 0;
  for (let modelCalls = 1; modelCalls <= 50; modelCalls++) {
    if (!overflows(messages)) return { modelCalls };
    const r = await compactContext(input(messages, { summarize, attemptsSoFar: attempts, reason: "overflow" }));
    if (r.outcome !== "compacted" && r.outcome !== "truncated") return { modelCalls, last: r };
    attempts++;
    messages = r.messages;
  }
  throw new Error("the run looped: 50 model calls");
}

describe("a run that keeps overflowing", () => {
  it("with a summarizer that returns more than its input, ends in context_length after one compaction", async () => {
    const fake = fakeSummarizer((p) => promptText(p).repeat(2));
    const r = await runWithCompaction(conversation(30, 100), () => true, fake.summarize);
    expect(r.last).toMatchObject({ outcome: "failed", kind: "context_length" });
    expect(r.modelCalls).toBe(1);
    expect(fake.prompts).toHaveLength(1);
  });

  it("with a provider that refuses every context, ends in context_length after at most 3 compactions", async () => {
    const fake = fakeSummarizer((_p, n) => `summary ${n}`);
    const r = await runWithCompaction(conversation(30, 100), () => true, fake.summarize);
    expect(r.last).toMatchObject({ outcome: "exhausted", kind: "context_length", attempt: 4 });
    expect(r.modelCalls).toBe(4);
    expect(fake.prompts).toHaveLength(3);
  });

  it("recovers when one compaction is enough", async () => {
    const fake = fakeSummarizer(() => "short summary");
    const r = await runWithCompaction(conversation(30, 100), (m) => estimateMessagesTokens(m) >= 6_000, fake.summarize);
    expect(r).toEqual({ modelCalls: 2 });
    expect(fake.prompts).toHaveLength(1);
  });
});
