import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  isMessagingDuplicate,
  isSilentReply,
  normalizeForCompare,
  SILENT_TOKEN,
  shapeReply,
  stripTrailingSilentToken,
} from "./reply.js";

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

  it("no fallback when block streaming already delivered the reply, and the undelivered tail is kept", () => {
    const toolErrors = [{ name: "exec", message: "timeout" }];
    expect(shapeReply({ assistantText: "", toolErrors, deliveredByBlocks: true })).toEqual([]);
    expect(shapeReply({ assistantText: " the tail ", toolErrors, deliveredByBlocks: true })).toEqual([
      { text: "the tail" },
    ]);
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

describe("messaging-tool duplicates: normalized containment, both ≥ 10 chars, contained ≥ 50 % of the container", () => {
  it("an exact repeat is a duplicate at any length, case, whitespace and edge punctuation aside", () => {
    expect(isMessagingDuplicate("Done!", "done")).toBe(true);
    expect(isMessagingDuplicate("  All   set.\n", "all set")).toBe(true);
  });

  it("containment counts from 10 normalized characters on both sides, not at 9", () => {
    // 10 chars inside 20: exactly 50 %
    expect(isMessagingDuplicate("abcdefghij", "abcdefghij klmnopqrs")).toBe(true);
    // 9 chars inside 18: the share is fine, the length is not
    expect(isMessagingDuplicate("abcdefghi", "abcdefghi jklmnopq")).toBe(false);
  });

  it("the contained text must be at least half the container: 50 % is a duplicate, just under is not", () => {
    const inner = "0123456789"; // 10
    expect(isMessagingDuplicate(inner, `${inner} 12345678`)).toBe(true); // 10 of 19
    expect(isMessagingDuplicate(inner, `${inner} 123456789`)).toBe(true); // 10 of 20: exactly half
    expect(isMessagingDuplicate(inner, `${inner} 1234567890`)).toBe(false); // 10 of 21
  });

  it("works in both directions: the answer inside the message, or the message inside the answer", () => {
    const message = "The deploy to staging finished at 14:02.";
    const answer = "The deploy to staging finished at 14:02. Anything else?";
    expect(isMessagingDuplicate(answer, message)).toBe(true);
    expect(isMessagingDuplicate(message, answer)).toBe(true);
    expect(shapeReply({ assistantText: answer, messagingSends: [message] })).toEqual([]);
  });

  it("texts that do not contain each other are never duplicates", () => {
    expect(isMessagingDuplicate("The deploy finished fine.", "The deploy failed badly.")).toBe(false);
    expect(isMessagingDuplicate("", "")).toBe(false);
  });

  it("property: the rule is symmetric, and an answer made of a message plus a shorter tail is always removed", () => {
    const word = fc.stringMatching(/^[a-z]{1,8}$/);
    const text = fc.array(word, { minLength: 1, maxLength: 12 }).map((ws) => ws.join(" "));
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(isMessagingDuplicate(a, b)).toBe(isMessagingDuplicate(b, a));
      }),
    );
    fc.assert(
      fc.property(text, text, (message, tail) => {
        fc.pre(normalizeForCompare(message).length >= 10);
        fc.pre(normalizeForCompare(tail).length + 1 <= normalizeForCompare(message).length);
        const answer = `${message} ${tail}`;
        expect(isMessagingDuplicate(answer, message)).toBe(true);
        expect(shapeReply({ assistantText: answer, messagingSends: [message] })).toEqual([]);
      }),
    );
  });

  it("property: an answer more than twice as long as every message sent is never removed", () => {
    const word = fc.stringMatching(/^[a-z]{1,8}$/);
    const text = fc.array(word, { minLength: 2, maxLength: 10 }).map((ws) => ws.join(" "));
    fc.assert(
      fc.property(text, text, (message, extra) => {
        const answer = `${message} ${extra} ${extra} ${message}`;
        fc.pre(normalizeForCompare(answer).length > 2 * normalizeForCompare(message).length);
        expect(shapeReply({ assistantText: answer, messagingSends: [message] })).toEqual([{ text: answer }]);
      }),
    );
  });
});
