import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { readSseEvents, SseDecoder, type SseEvent, SseParser } from "./sse.js";

function parseAll(pieces: string[]): SseEvent[] {
  const parser = new SseParser();
  const events = pieces.flatMap((piece) => parser.push(piece));
  parser.end();
  return events;
}

function decodeAll(pieces: Uint8Array[]): SseEvent[] {
  const decoder = new SseDecoder();
  return [...pieces.flatMap((piece) => decoder.push(piece)), ...decoder.end()];
}

const data = (text: string, event?: string): SseEvent => ({ event, data: text });

// A stream with every feature at once: CRLF and lone-CR lines, a comment, a multi-line event, a named event,
// multi-byte characters (2, 3 and 4 bytes in UTF-8) and the end marker.
const MIXED =
  ': hello\r\n\r\ndata: {"a":1}\n\ndata: line one\r\ndata:line two\r\rdata: é 世 😀\n: ping\nevent: note\ndata: x\n\ndata: [DONE]\n\n';
const MIXED_EVENTS = [data('{"a":1}'), data("line one\nline two"), data("é 世 😀\nx", "note"), data("[DONE]")];

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

describe("SseDecoder", () => {
  const bytes = new TextEncoder().encode(MIXED);

  it("gives the same events however the bytes are split, including inside a multi-byte character", () => {
    for (let i = 0; i <= bytes.length; i++) {
      expect(decodeAll([bytes.subarray(0, i), bytes.subarray(i)]), `split at byte ${i}`).toEqual(MIXED_EVENTS);
    }
  });

  it("gives the same events when the bytes arrive one at a time", () => {
    expect(decodeAll(Array.from(bytes, (b) => Uint8Array.of(b)))).toEqual(MIXED_EVENTS);
  });

  it("keeps a 4-byte character whose bytes arrive in three pieces whole", () => {
    const emoji = new TextEncoder().encode("data: 😀\n\n");
    const at = emoji.indexOf(0xf0);
    const decoder = new SseDecoder();
    expect(decoder.push(emoji.subarray(0, at + 1))).toEqual([]);
    expect(decoder.push(emoji.subarray(at + 1, at + 3))).toEqual([]);
    expect(decoder.push(emoji.subarray(at + 3))).toEqual([data("😀")]);
  });

  it("skips a byte order mark at the start of the stream", () => {
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode("data: x\n\n")]);
    expect(decodeAll([withBom.subarray(0, 2), withBom.subarray(2)])).toEqual([data("x")]);
  });
});

function streamOf(pieces: string[], onCancel?: () => void): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < pieces.length) controller.enqueue(encoder.encode(pieces[next++]));
      else controller.close();
    },
    cancel() {
      onCancel?.();
    },
  });
}

describe("readSseEvents", () => {
  it("yields the events of a body in order", async () => {
    const events: SseEvent[] = [];
    for await (const event of readSseEvents(streamOf(["data: a\n", "\ndata: b\n\nda", "ta: c\n\n"]))) {
      events.push(event);
    }
    expect(events).toEqual([data("a"), data("b"), data("c")]);
  });

  it("cancels the body when the loop is left early, and not when it was read to the end", async () => {
    let cancelled = 0;
    for await (const event of readSseEvents(streamOf(["data: a\n\ndata: b\n\n", "data: c\n\n"], () => cancelled++))) {
      if (event.data === "a") break;
    }
    expect(cancelled).toBe(1);

    for await (const _ of readSseEvents(streamOf(["data: a\n\n"], () => cancelled++))) {
      // read to the end
    }
    expect(cancelled).toBe(1);
  });

  it("throws the body's own error", async () => {
    let sent = false;
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) controller.error(new TypeError("terminated"));
        else controller.enqueue(new TextEncoder().encode("data: a\n\n"));
        sent = true;
      },
    });
    const events: SseEvent[] = [];
    await expect(
      (async () => {
        for await (const event of readSseEvents(failing)) events.push(event);
      })(),
    ).rejects.toThrow("terminated");
    expect(events).toEqual([data("a")]);
  });

  it("reads a real HTTP body written in small pieces, split inside characters and CRLFs", async () => {
    const body = Buffer.from(MIXED.replace(/(?<!\r)\n/g, "\r\n"), "utf8");
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let at = 0;
      const pump = () => {
        if (at >= body.length) {
          res.end();
          return;
        }
        res.write(body.subarray(at, at + 3));
        at += 3;
        setTimeout(pump, 1);
      };
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/`);
      const events: SseEvent[] = [];
      if (!response.body) throw new Error("no body");
      for await (const event of readSseEvents(response.body)) events.push(event);
      expect(events).toEqual(MIXED_EVENTS);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
