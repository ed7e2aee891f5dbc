import { describe, expect, it } from "vitest";
import { StatusLine } from "./status-line.js";
import { manualTimer } from "./test-helpers.js";

function setup(opts: { color?: boolean; columns?: number } = {}) {
  const t = manualTimer();
  const written: string[] = [];
  const line = new StatusLine({
    write: (s) => written.push(s),
    color: opts.color ?? false,
    timer: t.timer,
    columns: () => opts.columns,
  });
  return { ...t, written, line };
}

describe("the status line", () => {
  it("redraws in place with the time the state has lasted, ten times a second", () => {
    const { line, written, advance } = setup();
    line.show((ms) => `waiting · ${ms} ms`);
    expect(written, "nothing before the first tick: a state shorter than a tick never flickers").toEqual([]);
    advance(100);
    advance(100);
    expect(written).toEqual(["\r\x1b[Kwaiting · 100 ms", "\r\x1b[Kwaiting · 200 ms"]);
    advance(1000);
    expect(written).toHaveLength(12);
  });

  it("erase clears the drawn line once, and the next tick draws it again", () => {
    const { line, written, advance } = setup();
    line.show(() => "busy");
    advance(100);
    line.erase();
    line.erase();
    expect(written).toEqual(["\r\x1b[Kbusy", "\r\x1b[K"]);
    advance(100);
    expect(written.at(-1)).toBe("\r\x1b[Kbusy");
  });

  it("erasing a line that was never drawn writes nothing", () => {
    const { line, written } = setup();
    line.erase();
    line.show(() => "busy");
    line.erase();
    expect(written).toEqual([]);
  });

  it("hide removes the line and stops the timer, so a finished run leaves nothing ticking", () => {
    const { line, written, advance, active } = setup();
    line.show(() => "busy");
    expect(active()).toBe(1);
    advance(100);
    line.hide();
    expect(active()).toBe(0);
    advance(1000);
    expect(written).toEqual(["\r\x1b[Kbusy", "\r\x1b[K"]);
  });

  it("a new state restarts the elapsed time and keeps one timer", () => {
    const { line, written, advance, active } = setup();
    line.show((ms) => `a ${ms}`);
    advance(300);
    line.show((ms) => `b ${ms}`);
    advance(100);
    expect(active()).toBe(1);
    expect(written.at(-1)).toBe("\r\x1b[Kb 100");
  });

  it("is cut to the terminal width so it never wraps (a wrapped line cannot be erased with \\r)", () => {
    const { line, written, advance } = setup({ columns: 12 });
    line.show(() => "waiting for session lock held by pid 4242");
    advance(100);
    expect(written[0]).toBe("\r\x1b[Kwaiting fo…");
  });

  it("is dimmed only when colour is on for its stream", () => {
    const colored = setup({ color: true });
    colored.line.show(() => "busy");
    colored.advance(100);
    expect(colored.written[0]).toBe("\r\x1b[K\x1b[2mbusy\x1b[0m");
  });
});
