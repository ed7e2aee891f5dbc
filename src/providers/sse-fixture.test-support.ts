import type { SseEvent } from "./sse.js";

export const sseData = (text: string, event?: string): SseEvent => ({ event, data: text });

/**
 * A stream with every feature at once: CRLF and lone-CR lines, a comment, a multi-line event, a named event,
 * multi-byte characters (2, 3 and 4 bytes in UTF-8) and the end marker. sse.test.ts splits it as text;
 * http-stream.test.ts sends it over HTTP split inside characters and CRLFs.
 */
export const MIXED =
  ': hello\r\n\r\ndata: {"a":1}\n\ndata: line one\r\ndata:line two\r\rdata: é 世 😀\n: ping\nevent: note\ndata: x\n\ndata: [DONE]\n\n';
export const MIXED_EVENTS = [
  sseData('{"a":1}'),
  sseData("line one\nline two"),
  sseData("é 世 😀\nx", "note"),
  sseData("[DONE]"),
];
