import { describe, expect, it } from "vitest";
import { type SseEvent, SseParser } from "./sse.js";
import { sseData as data, MIXED, MIXED_EVENTS } from "./sse-fixture.test-support.js";

function parseAll(pieces: string[]): SseEvent[] {
  const parser = new SseParser();
  const events = pieces.flatMap((piece) => parser.push(piece));
  parser.end();
  return events;
}

describe("SseParser", () => {
  it("reads data events separated by blank lines", () => {
    expect(parseAll(['data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n'])).toEqual([
      data('{"n":1}'),
      data('{"n":2}'),
      data("[DONE]"),
    ]);
  });

  it("joins the data lines of one event with newlines", () => {
    expect(parseAll(["data: first\ndata: second\ndata:\ndata: fourth\n\n"])).toEqual([data("first\nsecond\n\nfourth")]);
  });

  it("strips exactly one space after the colon, and takes a line without a colon as a field with no value", () => {
    expect(parseAll(["data:no space\n\ndata:  two spaces\n\ndata\n\n"])).toEqual([
      data("no space"),
      data(" two spaces"),
      data(""),
    ]);
  });

  it("ignores comments, including between the lines of one event", () => {
    expect(parseAll([": keep-alive\n\n:\ndata: a\n: OPENROUTER PROCESSING\ndata: b\n\n: ping\n\n"])).toEqual([
      data("a\nb"),
    ]);
  });

  it("dispatches nothing for blank lines, comments or an event type without data", () => {
    expect(parseAll(["\n\n\r\n: c\n\nevent: ping\n\n"])).toEqual([]);
  });

  it("carries the event type and resets it after each event", () => {
    expect(parseAll(["event: error\ndata: {}\n\ndata: {}\n\n"])).toEqual([data("{}", "error"), data("{}")]);
  });

  it("ignores id, retry and unknown fields", () => {
    expect(parseAll(["id: 7\nretry: 1000\nfoo: bar\ndata: x\n\n"])).toEqual([data("x")]);
  });

  it("ignores a field whose name only begins with data or event (it is another field)", () => {
    expect(parseAll(["database: x\ndata: kept\neventual: y\ndatum\n\n", "events: z\ndata: two\n\n"])).toEqual([
      data("kept"),
      data("two"),
    ]);
  });

  it("accepts CRLF and lone CR line endings, also mixed", () => {
    expect(parseAll(["data: a\r\n\r\ndata: b\r\rdata: c\n\r\ndata: d\r\n\n"])).toEqual([
      data("a"),
      data("b"),
      data("c"),
      data("d"),
    ]);
  });

  it("does not take the LF of a CRLF split across two pieces for a blank line", () => {
    expect(parseAll(["data: a\r", "\ndata: b\r", "\n\r", "\n"])).toEqual([data("a\nb")]);
  });

  it("gives the same events however the text is split into two pieces", () => {
    for (let i = 0; i <= MIXED.length; i++) {
      expect(parseAll([MIXED.slice(0, i), MIXED.slice(i)]), `split at ${i}`).toEqual(MIXED_EVENTS);
    }
  });

  it("gives the same events when the text arrives one character at a time, with empty pieces in between", () => {
    expect(parseAll([...MIXED].flatMap((ch) => [ch, ""]))).toEqual(MIXED_EVENTS);
  });

  it("returns an event as soon as its blank line arrives", () => {
    const parser = new SseParser();
    expect(parser.push('data: {"n":1}\n')).toEqual([]);
    expect(parser.push("\ndata: {")).toEqual([data('{"n":1}')]);
    expect(parser.push('"n":2}\n\n')).toEqual([data('{"n":2}')]);
  });

  it("drops an event the stream ended in the middle of", () => {
    expect(parseAll(["data: complete\n\ndata: cut off\n"])).toEqual([data("complete")]);
    expect(parseAll(["data: complete\n\ndata: cut"])).toEqual([data("complete")]);
  });
});
