import { describe, expect, it } from "vitest";
import { colorFor, painter } from "./color.js";

const tty = { isTTY: true };
const pipe = { isTTY: false };

describe("colour is decided for the stream it is written to", () => {
  it("a terminal gets colour and a pipe does not, in the same environment", () => {
    const env = { TERM: "xterm-256color" };
    expect(colorFor(tty, { env })).toBe(true);
    expect(colorFor(pipe, { env })).toBe(false);
    expect(colorFor({}, { env }), "a stream that says nothing is not a terminal").toBe(false);
  });

  it("NO_COLOR with any non-empty value turns colour off for a terminal; an empty NO_COLOR does not", () => {
    expect(colorFor(tty, { env: { NO_COLOR: "1" } })).toBe(false);
    expect(colorFor(tty, { env: { NO_COLOR: "anything" } })).toBe(false);
    expect(colorFor(tty, { env: { NO_COLOR: "" } })).toBe(true);
  });

  it("FORCE_COLOR turns colour on even for a pipe, and beats NO_COLOR", () => {
    expect(colorFor(pipe, { env: { FORCE_COLOR: "1" } })).toBe(true);
    expect(colorFor(pipe, { env: { FORCE_COLOR: "3" } })).toBe(true);
    expect(colorFor(pipe, { env: { FORCE_COLOR: "1", NO_COLOR: "1" } })).toBe(true);
  });

  it("FORCE_COLOR=0 (or false) turns colour off even for a terminal", () => {
    expect(colorFor(tty, { env: { FORCE_COLOR: "0" } })).toBe(false);
    expect(colorFor(tty, { env: { FORCE_COLOR: "false" } })).toBe(false);
  });

  it("--no-color wins over FORCE_COLOR and a terminal", () => {
    expect(colorFor(tty, { flag: false, env: { FORCE_COLOR: "1" } })).toBe(false);
    expect(colorFor(tty, { flag: true, env: {} })).toBe(true);
  });

  it("a dumb terminal gets no colour unless forced", () => {
    expect(colorFor(tty, { env: { TERM: "dumb" } })).toBe(false);
    expect(colorFor(tty, { env: { TERM: "dumb", FORCE_COLOR: "1" } })).toBe(true);
  });
});

describe("painter", () => {
  it("adds escape codes only when enabled", () => {
    expect(painter(true).red("x")).toBe("\x1b[31mx\x1b[0m");
    expect(painter(false).red("x")).toBe("x");
  });
});
