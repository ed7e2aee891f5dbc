import { describe, expect, it } from "vitest";
import { estimateTokens } from "../../prompt/context-budget.js";
import type { ChatMessage } from "../../providers/types.js";
import { SUMMARIZER_SYSTEM_PROMPT, summarizeHistory } from "./summarize-history.js";
import { call, conversation, fakeSummarizer, promptText, result, said, user } from "./test-helpers.js";

const signal = new AbortController().signal;
const promptTokens = (p: { system: string; messages: ChatMessage[] }) =>
  estimateTokens(p.system) + estimateTokens(promptText(p));

describe("summarizeHistory", () => {
  it("sends the conversation as compact lines in one call when it fits", async () => {
    const fake = fakeSummarizer(() => "  - user wants the bug in a.ts fixed  ");
    const messages: ChatMessage[] = [
      user("fix the bug in a.ts"),
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "secret plan" },
          { type: "text", text: "Looking." },
        ],
      },
      call("c1", "read", { path: "a.ts" }),
      result("c1", "export const a = 1;"),
      { role: "toolResult", toolCallId: "c2", toolName: "exec", content: "exit 1", isError: true },
      said("Found it."),
    ];
    const out = await summarizeHistory({
      messages,
      summarize: fake.summarize,
      maxInputTokens: 10_000,
      maxOutputTokens: 800,
      signal,
    });
    expect(out).toEqual({ summary: "- user wants the bug in a.ts fixed", calls: 1 });
    const [prompt] = fake.prompts;
    expect(prompt.system).toBe(SUMMARIZER_SYSTEM_PROMPT);
    expect(prompt.maxTokens).toBe(800);
    const text = promptText(prompt);
    expect(text).toContain(
      [
        "User: fix the bug in a.ts",
        "Assistant: Looking.",
        'Tool call read: {"path":"a.ts"}',
        "Tool result (read): export const a = 1;",
        "Tool error (exec): exit 1",
        "Assistant: Found it.",
      ].join("\n"),
    );
    expect(text).not.toContain("secret plan");
  });

  it("the system prompt asks to keep what the assistant needs to carry on", () => {
    for (const needed of ["decisions", "open tasks", "file paths", "preferences", "tool calls", "Do not invent"]) {
      expect(SUMMARIZER_SYSTEM_PROMPT).toContain(needed);
    }
  });

  it("builds on the previous summary and passes the user's /compact instructions", async () => {
    const fake = fakeSummarizer(() => "new summary");
    await summarizeHistory({
      messages: [user("and now b.ts")],
      summarize: fake.summarize,
      maxInputTokens: 10_000,
      previousSummary: "earlier: fixed a.ts",
      instructions: "focus on file names",
      signal,
    });
    const text = promptText(fake.prompts[0]);
    expect(text).toContain("<summary>\nearlier: fixed a.ts\n</summary>");
    expect(text).toContain("replaces the earlier summary entirely");
    expect(text).toContain("Additional instructions from the user:\nfocus on file names");
  });

  it("summarizes a history too big for one call in stages, in order, each carrying the summary so far", async () => {
    const fake = fakeSummarizer((_p, n) => `summary after stage ${n}`);
    const messages = conversation(40, 200); // about 16,000 tokens
    const out = await summarizeHistory({ messages, summarize: fake.summarize, maxInputTokens: 3_000, signal });
    expect(fake.prompts.length).toBeGreaterThan(5);
    expect(out).toEqual({ summary: `summary after stage ${fake.prompts.length}`, calls: fake.prompts.length });
    for (const [i, prompt] of fake.prompts.entries()) {
      expect(promptTokens(prompt)).toBeLessThanOrEqual(3_000);
      if (i > 0) expect(promptText(prompt)).toContain(`<summary>\nsummary after stage ${i}\n</summary>`);
    }
    // every message went to exactly one stage, oldest first
    const all = fake.prompts.map(promptText).join("\n");
    const order = [...all.matchAll(/User: question (\d+) /g)].map((m) => Number(m[1]));
    expect(order).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it("a summarizer that answers with more than it was given cannot blow up the next stage", async () => {
    const fake = fakeSummarizer((p) => promptText(p).repeat(3));
    const out = await summarizeHistory({
      messages: conversation(40, 200),
      summarize: fake.summarize,
      maxInputTokens: 3_000,
      signal,
    });
    expect(out.calls).toBe(fake.prompts.length);
    expect(out.calls).toBeLessThan(20);
    for (const prompt of fake.prompts) expect(promptTokens(prompt)).toBeLessThanOrEqual(3_000);
  });

  it("a single message bigger than a whole call is cut to fit it", async () => {
    const fake = fakeSummarizer(() => "s");
    await summarizeHistory({
      messages: [user(`HEAD ${"x".repeat(100_000)} TAIL`)],
      summarize: fake.summarize,
      maxInputTokens: 2_000,
      signal,
    });
    expect(fake.prompts).toHaveLength(1);
    expect(promptTokens(fake.prompts[0])).toBeLessThanOrEqual(2_000);
    expect(promptText(fake.prompts[0])).toMatch(
      /User: HEAD x+\n\[\.\.\. [\d,]+ characters cut from the middle \.\.\.\]\nx+ TAIL/,
    );
  });

  it("stops at a stage that returns no text instead of losing what came before it", async () => {
    const fake = fakeSummarizer((_p, n) => (n === 2 ? "   " : `stage ${n}`));
    const out = await summarizeHistory({
      messages: conversation(40, 200),
      summarize: fake.summarize,
      maxInputTokens: 3_000,
      signal,
    });
    expect(out).toEqual({ summary: "", calls: 2 });
  });

  it("an aborted run starts no summarizer call", async () => {
    const controller = new AbortController();
    controller.abort(new Error("user pressed stop"));
    const fake = fakeSummarizer(() => "s");
    await expect(
      summarizeHistory({
        messages: conversation(2, 10),
        summarize: fake.summarize,
        maxInputTokens: 3_000,
        signal: controller.signal,
      }),
    ).rejects.toThrow("user pressed stop");
    expect(fake.prompts).toHaveLength(0);
  });
});
