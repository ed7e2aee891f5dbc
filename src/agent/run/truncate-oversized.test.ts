import { describe, expect, it } from "vitest";
import type { AssistantMessage, ChatMessage } from "../../providers/types.js";
import { call, result, said, user } from "./test-helpers.js";
import { estimateMessageTokens } from "./token-estimate.js";
import { cutOversizedMessages, truncateOversized, truncateText } from "./truncate-oversized.js";

const cutCount = (text: string) => Number(/\[\.\.\. ([\d,]+) characters cut/.exec(text)?.[1].replaceAll(",", ""));

describe("truncateText", () => {
  it("keeps the head and the tail and says how many characters were cut from the middle", () => {
    const text = `START ${"m".repeat(20_000)} END`;
    const cut = truncateText(text, 1_000);
    expect(cut.length).toBeLessThanOrEqual(1_000);
    expect(cut.startsWith("START mmm")).toBe(true);
    expect(cut.endsWith("mmm END")).toBe(true);
    expect(cut).toContain("[... 19,");
    const [head, tail] = cut.split(/\n\[\.\.\. [\d,]+ characters cut from the middle \.\.\.\]\n/);
    expect(head.length + tail.length + cutCount(cut)).toBe(text.length);
  });

  it("leaves text that fits alone", () => {
    expect(truncateText("short", 5)).toBe("short");
  });

  it("never splits an emoji into half a character", () => {
    const text = "😀".repeat(5_000);
    for (const max of [101, 102, 103, 104]) {
      const cut = truncateText(text, max);
      // a lone surrogate would not survive the UTF-8 round trip a provider request makes
      expect(Buffer.from(cut, "utf8").toString("utf8")).toBe(cut);
    }
  });
});

describe("truncateOversized", () => {
  it("cuts a huge tool result to the limit, keeping its beginning and end", () => {
    const log = `first line\n${"noise\n".repeat(100_000)}Error: disk full`;
    const cut = truncateOversized(result("c1", log, "exec"), 1_000);
    expect(estimateMessageTokens(cut)).toBeLessThanOrEqual(1_000);
    expect(cut).toMatchObject({ role: "toolResult", toolCallId: "c1", toolName: "exec", isError: false });
    const content = (cut as { content: string }).content;
    expect(content.startsWith("first line")).toBe(true);
    expect(content.endsWith("Error: disk full")).toBe(true);
    expect(content).toContain("characters cut from the middle");
  });

  it("returns a message within the limit unchanged (the same object)", () => {
    const m = user("hello");
    expect(truncateOversized(m, 100)).toBe(m);
  });

  it("cuts a pasted user message the same way", () => {
    const cut = truncateOversized(user(`please review:\n${"x".repeat(50_000)}\nthanks`), 2_000);
    expect(estimateMessageTokens(cut)).toBeLessThanOrEqual(2_000);
    expect((cut as { content: string }).content).toMatch(/^please review:[\s\S]*thanks$/);
  });

  it("cuts a huge file write inside tool call arguments and keeps the call usable", () => {
    const body = 'line "quoted"\n'.repeat(20_000);
    const original = call("c7", "write", { path: "src/big.ts", content: body, mode: 420 });
    const cut = truncateOversized(original, 3_000) as AssistantMessage;
    expect(estimateMessageTokens(cut)).toBeLessThanOrEqual(3_000);
    const block = cut.content[0];
    expect(block).toMatchObject({ type: "toolCall", id: "c7", name: "write" });
    if (block.type !== "toolCall") throw new Error("expected a tool call");
    expect(block.arguments.path).toBe("src/big.ts");
    expect(block.arguments.mode).toBe(420);
    expect(String(block.arguments.content)).toContain("characters cut from the middle");
    // the input message is not modified
    expect(original.content[0]).toMatchObject({ arguments: { content: body } });
  });

  it("shares the cut among long parts and leaves short ones and signed thinking whole", () => {
    const signed = { type: "thinking" as const, thinking: "t".repeat(8_000), signature: "sig" };
    const m: AssistantMessage = {
      role: "assistant",
      content: [signed, { type: "text", text: "short intro" }, { type: "text", text: "x".repeat(40_000) }],
    };
    const cut = truncateOversized(m, 5_000) as AssistantMessage;
    expect(estimateMessageTokens(cut)).toBeLessThanOrEqual(5_000);
    expect(cut.content[0]).toEqual(signed);
    expect(cut.content[1]).toEqual({ type: "text", text: "short intro" });
  });
});

describe("cutOversizedMessages", () => {
  it("cuts only the messages over the limit and counts them", () => {
    const messages: ChatMessage[] = [
      user("q"),
      call("c1", "read", { path: "a" }),
      result("c1", "r".repeat(40_000)),
      said("ok"),
    ];
    const { messages: out, cut } = cutOversizedMessages(messages, 1_000);
    expect(cut).toBe(1);
    expect(out[0]).toBe(messages[0]);
    expect(out[3]).toBe(messages[3]);
    expect(estimateMessageTokens(out[2])).toBeLessThanOrEqual(1_000);
  });
});
