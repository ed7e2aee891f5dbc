/**
 * A small Server-Sent Events reader (the `text/event-stream` format of the WHATWG HTML spec), enough for model APIs
 * that stream over SSE: `data:` lines (several in one event are joined with "\n"), `event:`, comments (lines starting
 * with ":"), a blank line ending an event, lines ending in LF, CRLF or a lone CR, and network chunks split anywhere,
 * including inside a line, between the CR and LF of a CRLF, or inside a multi-byte UTF-8 character.
 *
 * `id:` and `retry:` are read and ignored: they only matter to a client that reconnects, and a model stream is never
 * resumed. An event the stream ends in the middle of (no closing blank line) is dropped, as the spec says.
 *
 * Text in, events out: turning bytes into text (a character split between network reads, a byte order mark at the
 * start) is the reader's part (http-stream.ts).
 */

export interface SseEvent {
  /** the `event:` field; undefined when the event did not name one (the spec's default type "message") */
  event: string | undefined;
  /** the `data:` lines of the event, joined with "\n" */
  data: string;
}

const LF = 10;
const SPACE = 32;
const COLON = 58;

/** Turns decoded text, pushed in pieces of any size, into events. */
export class SseParser {
  /** the start of a line whose end has not arrived yet */
  private partial = "";
  /** the last piece ended in CR: a LF at the start of the next one is the rest of that CRLF, not an empty line */
  private afterCR = false;
  private data: string | undefined;
  private eventType: string | undefined;

  /** Parse the next piece of text; returns the events it completed (often none, often several). */
  push(piece: string): SseEvent[] {
    const events: SseEvent[] = [];
    if (piece.length === 0) return events;
    let text = piece;
    let start = 0;
    if (this.afterCR) {
      this.afterCR = false;
      if (text.charCodeAt(0) === LF) start = 1;
    }
    if (this.partial !== "") {
      text = this.partial + text.slice(start);
      start = 0;
      this.partial = "";
    }
    // indexOf for both terminators, each searched again only once passed, keeps this linear in the text length
    let lf = text.indexOf("\n", start);
    let cr = text.indexOf("\r", start);
    while (lf !== -1 || cr !== -1) {
      let end: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        end = lf;
        next = lf + 1;
      } else {
        end = cr;
        next = cr + 1;
        if (next === text.length) this.afterCR = true;
        else if (text.charCodeAt(next) === LF) next++;
      }
      this.line(text, start, end, events);
      start = next;
      if (lf !== -1 && lf < start) lf = text.indexOf("\n", start);
      if (cr !== -1 && cr < start) cr = text.indexOf("\r", start);
    }
    if (start < text.length) this.partial = text.slice(start);
    return events;
  }

  /** The stream ended: forget whatever event was still open. */
  end(): void {
    this.partial = "";
    this.afterCR = false;
    this.data = undefined;
    this.eventType = undefined;
  }

  /**
   * The line `text[start, end)`, read in place: only a field's value is cut out of the text (one string per `data:`
   * line rather than the line, its field name and its value: this runs for every chunk of every model stream).
   */
  private line(text: string, start: number, end: number, events: SseEvent[]): void {
    if (start === end) {
      if (this.data !== undefined) events.push({ event: this.eventType, data: this.data });
      this.data = undefined;
      this.eventType = undefined;
      return;
    }
    // Only `data` and `event` are read: any other field (a comment ":" included) is ignored, so a line is known by
    // its first characters and no search for its colon is needed.
    if (text.startsWith("data", start)) {
      const value = this.value(text, start + 4, end);
      if (value === undefined) return;
      this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    } else if (text.startsWith("event", start)) {
      const value = this.value(text, start + 5, end);
      if (value !== undefined) this.eventType = value;
    }
  }

  /** The value of a field whose name ends at `at`: none when the name goes on (e.g. "database"). */
  private value(text: string, at: number, end: number): string | undefined {
    if (at === end) return "";
    if (text.charCodeAt(at) !== COLON) return undefined;
    return text.slice(text.charCodeAt(at + 1) === SPACE && at + 1 < end ? at + 2 : at + 1, end);
  }
}
