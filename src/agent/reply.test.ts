import { describe, expect, it } from "vitest";
import { isSilentReply, SILENT_TOKEN, shapeReply, stripTrailingSilentToken } from "./reply.js";

const texts = (payloads: Array<{ text: string }>) => payloads.map((p) => p.text);

describe("the silent token NO_REPLY", () => {
  it("the exact token is silent", () => {
    expect(SILENT_TOKEN).toBe("NO_REPLY");
    expect(isSilentReply("NO_REPLY")).toBe(true);
    expect(shapeReply({ assistantText: "NO_REPLY" })).toEqual([]);
  });

  it.each(["no_reply", "No_Reply", "nO_rEpLy"])("is silent in any case: %s", (text) => {
    expect(isSilentReply(text)).toBe(true);
    expect(shapeReply({ assistantText: text })).toEqual([]);
  });

  it.each(["  NO_REPLY.", '"NO_REPLY"', "**NO_REPLY**", "\n\tNO_REPLY\n", "`NO_REPLY`", "(NO_REPLY)!"])(
    "is silent surrounded only by whitespace/punctuation: %j",
    (text) => {
      expect(isSilentReply(text)).toBe(true);
      expect(shapeReply({ assistantText: text })).toEqual([]);
    },
  );

  it("text that merely ends with the token keeps the text and loses the token", () => {
    expect(isSilentReply("Done. NO_REPLY")).toBe(false);
    expect(stripTrailingSilentToken("Done. NO_REPLY")).toBe("Done.");
    expect(stripTrailingSilentToken("All set!\n\nno_reply.")).toBe("All set!");
    expect(shapeReply({ assistantText: "Done. NO_REPLY" })).toEqual([{ text: "Done." }]);
  });

  it("text with the token in the middle is left untouched", () => {
    const text = "Reply with NO_REPLY when there is nothing to say.";
    expect(isSilentReply(text)).toBe(false);
    expect(stripTrailingSilentToken(text)).toBe(text);
    expect(shapeReply({ assistantText: text })).toEqual([{ text }]);
  });

  it("a word that only contains the token is not the token", () => {
    expect(isSilentReply("NO_REPLYING")).toBe(false);
    expect(stripTrailingSilentToken("I am XNO_REPLY")).toBe("I am XNO_REPLY");
    expect(isSilentReply("")).toBe(false);
  });
});

describe("shapeReply", () => {
  it("a plain answer becomes one trimmed payload", () => {
    expect(shapeReply({ assistantText: "  Hello there.\n" })).toEqual([{ text: "Hello there." }]);
  });

  it("an empty answer yields nothing", () => {
    expect(shapeReply({ assistantText: "" })).toEqual([]);
    expect(shapeReply({ assistantText: "   \n" })).toEqual([]);
  });

  it("a tool failure with nothing else to show yields the fallback tool-error reply", () => {
    const payloads = shapeReply({
      assistantText: "",
      toolErrors: [{ name: "exec", message: "command not found: mkae\n(exit code 127)" }],
    });
    expect(payloads).toEqual([{ text: "⚠️ exec failed: command not found: mkae", kind: "error" }]);
  });

  it("a silent answer after a tool failure still gets the fallback (nothing renderable remains)", () => {
    const payloads = shapeReply({
      assistantText: "NO_REPLY",
      toolErrors: [{ name: "read", message: "ENOENT: notes.md" }],
    });
    expect(texts(payloads)).toEqual(["⚠️ read failed: ENOENT: notes.md"]);
  });

  it("names the last failed tool when several failed", () => {
    const payloads = shapeReply({
      assistantText: "",
      toolErrors: [
        { name: "read", message: "ENOENT" },
        { name: "exec", message: "permission denied" },
      ],
    });
    expect(texts(payloads)).toEqual(["⚠️ exec failed: permission denied"]);
  });

  it("no fallback when the model said something", () => {
    const payloads = shapeReply({
      assistantText: "The build failed; I fixed the Makefile.",
      toolErrors: [{ name: "exec", message: "x" }],
    });
    expect(payloads).toEqual([{ text: "The build failed; I fixed the Makefile." }]);
  });

  it("no fallback when no tool failed", () => {
    expect(shapeReply({ assistantText: "", toolErrors: [] })).toEqual([]);
  });

  it("no fallback when a messaging tool already sent the user a visible reply", () => {
    const payloads = shapeReply({
      assistantText: "",
      toolErrors: [{ name: "exec", message: "timeout" }],
      messagingSends: ["I have posted the summary to the channel."],
    });
    expect(payloads).toEqual([]);
  });

  it("drops the final text when a messaging tool already sent the same text (whitespace and case aside)", () => {
    const payloads = shapeReply({
      assistantText: "The deploy  finished.\n",
      messagingSends: ["the deploy finished."],
    });
    expect(payloads).toEqual([]);
  });

  it("keeps the final text when it differs from what the messaging tool sent", () => {
    const payloads = shapeReply({ assistantText: "Anything else?", messagingSends: ["The deploy finished."] });
    expect(payloads).toEqual([{ text: "Anything else?" }]);
  });

  it("appends the model error text after the partial answer", () => {
    const payloads = shapeReply({
      assistantText: "Here is the first part",
      modelError: "openai: 503 server error: overloaded",
    });
    expect(payloads).toEqual([
      { text: "Here is the first part" },
      { text: "⚠️ openai: 503 server error: overloaded", kind: "error" },
    ]);
  });

  it("a model error is the visible reply, so no tool fallback is added on top", () => {
    const payloads = shapeReply({
      assistantText: "",
      modelError: "rate limited",
      toolErrors: [{ name: "exec", message: "boom" }],
    });
    expect(texts(payloads)).toEqual(["⚠️ rate limited"]);
  });

  it("reasoning is included only when asked, and does not count as a visible reply", () => {
    expect(shapeReply({ assistantText: "42", reasoning: "6 × 7" })).toEqual([{ text: "42" }]);
    expect(shapeReply({ assistantText: "42", reasoning: "6 × 7", includeReasoning: true })).toEqual([
      { text: "6 × 7", kind: "reasoning" },
      { text: "42" },
    ]);
    const onlyReasoning = shapeReply({
      assistantText: "",
      reasoning: "I should run the tests",
      includeReasoning: true,
      toolErrors: [{ name: "exec", message: "npm: not found" }],
    });
    expect(texts(onlyReasoning)).toEqual(["I should run the tests", "⚠️ exec failed: npm: not found"]);
  });

  it("tool summaries appear only in verbose mode", () => {
    const toolSummaries = ["⚙ exec ls → ok"];
    expect(shapeReply({ assistantText: "Done.", toolSummaries })).toEqual([{ text: "Done." }]);
    expect(shapeReply({ assistantText: "Done.", toolSummaries, verbose: true })).toEqual([
      { text: "⚙ exec ls → ok", kind: "tool_summary" },
      { text: "Done." },
    ]);
  });
});
