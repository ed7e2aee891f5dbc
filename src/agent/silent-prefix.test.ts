import { describe, expect, it } from "vitest";
import { isSilentReply } from "./reply.js";
import { SilentTail, silentTokenTail } from "./silent-prefix.js";

describe("what streaming holds back because it may become NO_REPLY", () => {
  it("a whole text so far that is (part of) the token, in any case and with punctuation, is held entirely", () => {
    for (const t of ["N", "NO_", "no_re", "No_RePl", "NO_REPLY", "**NO_REP", "  NO_REPLY.\n", "*"]) {
      expect(silentTokenTail(t), t).toBe(t.length);
    }
  });

  it("a trailing fragment after a separator is held; the text before it is not", () => {
    expect(silentTokenTail("Done. NO_")).toBe(3);
    expect(silentTokenTail("Done.\nno_repl")).toBe(7);
    expect(silentTokenTail("Done. NO_REPLY")).toBe(8);
    expect(silentTokenTail("Done. NO_REPLY!\n")).toBe(10);
  });

  it("text that can no longer become the token is not held", () => {
    for (const t of ["NO_WAY", "Hello", "NOT", "Done. NO_REPLY is a token", "casino_re", "x".repeat(500)]) {
      expect(silentTokenTail(t), t).toBe(0);
    }
  });

  it("everything isSilentReply calls silent is held back whole while it streams", () => {
    for (const t of ["NO_REPLY", "no_reply", " NO_REPLY. ", "**NO_REPLY**"]) {
      expect(isSilentReply(t)).toBe(true);
      for (let i = 1; i <= t.length; i++) expect(silentTokenTail(t.slice(0, i)), t.slice(0, i)).toBe(i);
    }
  });

  it("a streamed reply followed delta by delta holds back exactly what the whole text so far would", () => {
    // pieces that build (and break) the token at the start, in the middle and at the end, around the 64-character
    // window, with long runs of separators
    const pieces = [
      "  ",
      "NO",
      "_RE",
      "PLY",
      " ",
      "Hello",
      "x".repeat(70),
      ". ",
      "no_",
      "repl",
      "y",
      "!",
      "\n",
      " ".repeat(150),
    ];
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let round = 0; round < 200; round++) {
      const tail = new SilentTail();
      let text = "";
      for (let step = 0; step < 12; step++) {
        if (random() < 0.05) {
          tail.reset();
          text = "";
        }
        const piece = pieces[Math.floor(random() * pieces.length)] ?? "";
        tail.append(piece);
        text += piece;
        expect(tail.held(), JSON.stringify(text)).toBe(silentTokenTail(text));
      }
    }
  });
});
