/**
 * One streamed HTTP POST over Node's own `http`/`https` modules, for the providers that read a Server-Sent Events
 * answer themselves (openai-completions).
 *
 * Why not fetch: a streamed token arrives as its own network read, so the cost of one read is the cost of one token.
 * Measured on the bench machine with 1,000 streams at 50 tokens/s, a fetch body read through its web stream cost
 * about 14.7 µs of JS per read and a Node `http` response's `data` event about 9.6 µs (system time the same ~6 µs
 * either way): at 50,000 reads a second that is a quarter of a core. Events are parsed in the `data` handler and
 * handed to the consumer in batches (per read, or per beat on the run's stream beat), so a token costs a share of one
 * settled promise.
 *
 * What fetch did and this keeps: keep-alive connections (the global agents keep sockets alive since Node 19), an
 * abort signal that cancels the request at any point, `gzip`/`deflate`/`br` bodies, and an error with the socket's
 * `code` for transport failures (errors.ts reads `code`). Proxies follow Node's own rules for its global agents
 * (`NODE_USE_ENV_PROXY` on Node 24), as fetch's do.
 */
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import type { Beat } from "../infra/cadence.js";
import { type SseEvent, SseParser } from "./sse.js";

/** An answer whose headers are in and whose body has not been read yet. */
export interface StreamedResponse {
  status: number;
  /** lower-case names, as Node gives them */
  headers: IncomingHttpHeaders;
  /**
   * The body's SSE events, in batches: what arrived since the consumer last took some. With `beat`, a batch is
   * handed on at once when none was in the current beat slot, else at the next beat (infra/cadence.ts), so a
   * stream of tokens reaches the consumer about once per beat however often the network delivers; without, once
   * per network read. The end of the body and errors are never held. Leaving the loop early closes the connection.
   */
  sseBatches(beat?: Beat): AsyncIterable<SseEvent[]>;
  /** the whole body as text, at most `maxBytes` of it (an error body: it is only read to be quoted) */
  text(maxBytes?: number): Promise<string>;
}

/** Error bodies are quoted in messages; a megabyte is far more than any API's error answer. */
const ERROR_BODY_CAP = 1024 * 1024;
/** A consumer this many events behind stops the socket until it catches up, so a slow run cannot buffer a flood. */
const PAUSE_AT_EVENTS = 256;

export function postStreamed(
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<StreamedResponse> {
  const target = new URL(url);
  // The built-ins come from getBuiltinModule, not `import`: an ES import of a built-in reads every export, and
  // node:http's include the lazy WebSocket, CloseEvent and MessageEvent getters, so `import ... from "node:http"`
  // loaded undici and node:zlib (76 more internal modules, ~100 ms of a cold CLI turn on the loaded bench machine,
  // 12 ms this way). node:https (TLS) is loaded only for an https: URL (10-20 ms), on first use.
  const send =
    target.protocol === "https:"
      ? process.getBuiltinModule("node:https").request
      : process.getBuiltinModule("node:http").request;
  return new Promise((resolve, reject) => {
    const req = send(target, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      signal,
    });
    req.once("error", reject);
    req.once("response", (res) => {
      // from here on a request error (an abort, a reset) reaches the reader through the response
      req.off("error", reject);
      req.on("error", (err) => res.destroy(err));
      resolve(streamedResponse(res));
    });
    req.end(body);
  });
}

function streamedResponse(res: IncomingMessage): StreamedResponse {
  const decoded = decodedBody(res);
  return {
    status: res.statusCode ?? 0,
    headers: res.headers,
    sseBatches: (beat) => sseBatches(decoded, res, beat),
    text: (maxBytes = ERROR_BODY_CAP) => bodyText(decoded, maxBytes),
  };
}

/** The body with its content coding undone; the response itself when it has none. */
function decodedBody(res: IncomingMessage): Readable {
  const coding = String(res.headers["content-encoding"] ?? "")
    .trim()
    .toLowerCase();
  if (coding === "" || coding === "identity") return res;
  // node:zlib only for a compressed reply (getBuiltinModule loads it synchronously on first use)
  const { createBrotliDecompress, createGunzip, createInflate } = process.getBuiltinModule("node:zlib");
  const decoder =
    coding === "gzip" || coding === "x-gzip"
      ? createGunzip()
      : coding === "deflate"
        ? createInflate()
        : coding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (!decoder) return res;
  res.on("error", (err) => decoder.destroy(err));
  // a body cut short must fail as one, not end quietly at the last whole block
  res.on("close", () => {
    if (!res.complete) decoder.destroy(truncated());
  });
  return res.pipe(decoder);
}

function truncated(): Error {
  return Object.assign(new Error("the connection closed before the response ended"), { code: "ECONNRESET" });
}

function bodyText(body: Readable, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on("data", (chunk: Buffer) => {
      if (size >= maxBytes) return;
      chunks.push(chunk);
      size += chunk.length;
    });
    body.once("end", () => resolve(Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8")));
    body.once("error", reject);
  });
}

/**
 * A pull interface over a push source: `data` parses right away and queues the events; `next` takes what is queued
 * or waits for more. One batch per read (or per beat) keeps the per-token cost to a share of one settled promise.
 */
function sseBatches(body: Readable, res: IncomingMessage, beat: Beat | undefined): AsyncIterable<SseEvent[]> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<SseEvent[]> {
      const parser = new SseParser();
      let queue: SseEvent[] = [];
      let ended = false;
      let failure: Error | undefined;
      let waiter: { resolve: (r: IteratorResult<SseEvent[]>) => void; reject: (e: Error) => void } | undefined;
      /** the beat slot of the last batch handed on, and whether a beat is asked to hand on the next */
      let lastSlot = Number.NEGATIVE_INFINITY;
      let beatAsked = false;
      /** a batch may go now: no beat, or none went in this slot yet */
      const mayHandOn = () => beat === undefined || beat.slot > lastSlot;
      const take = (): SseEvent[] => {
        const batch = queue;
        queue = [];
        if (beat) lastSlot = beat.slot;
        if (body.isPaused()) body.resume();
        return batch;
      };
      const onBeat = () => {
        beatAsked = false;
        settle(true);
      };

      const settle = (force = false) => {
        if (!waiter) return;
        const w = waiter;
        if (queue.length > 0) {
          if (!force && !ended && !failure && !mayHandOn()) {
            if (!beatAsked && beat) {
              beatAsked = true;
              beat.next(onBeat);
            }
            return;
          }
          waiter = undefined;
          w.resolve({ value: take(), done: false });
        } else if (failure) {
          waiter = undefined;
          w.reject(failure);
        } else if (ended) {
          waiter = undefined;
          w.resolve({ value: undefined, done: true });
        }
      };
      body.setEncoding("utf8");
      let first = true;
      body.on("data", (piece: string) => {
        // a byte order mark opening the stream is not part of the first line (the SSE spec skips it)
        const text = first && piece.charCodeAt(0) === 0xfeff ? piece.slice(1) : piece;
        if (piece.length > 0) first = false;
        const events = parser.push(text);
        if (events.length === 0) return;
        if (queue.length === 0) queue = events;
        else for (const event of events) queue.push(event);
        if (queue.length >= PAUSE_AT_EVENTS) body.pause();
        settle();
      });
      body.once("end", () => {
        // an event the body ended in the middle of (no closing blank line) is dropped, as the SSE spec says
        parser.end();
        ended = true;
        settle();
      });
      body.once("error", (err) => {
        failure = err;
        settle();
      });
      // the socket went away mid-body without an error of its own (a server that closes instead of ending)
      res.once("close", () => {
        if (!res.complete && !ended && !failure) {
          failure = truncated();
          settle();
        }
      });

      return {
        next() {
          if (queue.length > 0 && (ended || failure !== undefined || mayHandOn())) {
            return Promise.resolve({ value: take(), done: false });
          }
          if (queue.length === 0 && failure) return Promise.reject(failure);
          if (queue.length === 0 && ended) return Promise.resolve({ value: undefined, done: true });
          const waiting = new Promise<IteratorResult<SseEvent[]>>((resolve, reject) => {
            waiter = { resolve, reject };
          });
          settle();
          return waiting;
        },
        return() {
          if (beatAsked) beat?.cancel(onBeat);
          beatAsked = false;
          // leaving early: the rest of the body is not wanted, and the connection cannot be reused mid-body
          if (!ended) {
            ended = true;
            queue = [];
            res.destroy();
            if (body !== res) body.destroy();
          }
          return Promise.resolve({ value: undefined, done: true });
        },
      };
    },
  };
}
