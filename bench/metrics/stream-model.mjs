// The streaming bench's model, in its own process: an OpenAI Chat Completions server whose every answer is a long
// text streamed at a fixed token rate, one token per SSE chunk, as a real model streams. The user message says how
// much: "stream <tokens> <tokensPerSecond>". Each token is " " + the wall-clock time it was written (tenths of a ms
// since `epochMs`, base 36), so a client can tell how long the token took to reach it (same machine, same clock).
// Streams are spread over the tick interval so that N streams do not all write in the same millisecond.
// Prints {"baseUrl"} once listening; answers "cpu" on stdin with its CPU time; exits when stdin closes.
// Options: { epochMs }.
import { createServer } from "node:http";
import { childOptions } from "../lib/child.mjs";
import { wallMs } from "../lib/stats.mjs";

const { epochMs } = childOptions();
/** the scheduler's resolution: each stream belongs to one of SLOTS slots, visited in turn every TICK_MS */
const TICK_MS = 2;
const SLOTS = 10;
const slots = Array.from({ length: SLOTS }, () => new Set());
let nextSlot = 0;
let chunkId = 0;

const head = (id) =>
  `{"id":"chatcmpl-s${id}","object":"chat.completion.chunk","created":${Math.floor(Date.now() / 1000)},"model":"fake-model","choices":`;

/** The token that carries its own send time. */
const stampedToken = () => ` ${Math.round((wallMs() - epochMs) * 10).toString(36)}`;

/**
 * One HTTP/1.1 chunk written straight to the socket. The bench machine also runs the gateway and the clients, and
 * `res.write` spends more of the model's CPU on its own bookkeeping than the socket write itself; the bytes on the
 * wire are the same (the response is `transfer-encoding: chunked`, and `res.end()` writes the last chunk).
 */
function writeChunk(socket, text) {
  socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
}

function startStream(res, tokens, rate, withUsage) {
  const id = ++chunkId;
  const h = head(id);
  const tail = withUsage ? `,"usage":null}` : "}";
  const socket = res.socket;
  const stream = {
    left: tokens,
    intervalMs: 1000 / rate,
    due: wallMs(),
    write() {
      const delta = JSON.stringify({ content: stampedToken() });
      writeChunk(socket, `data: ${h}[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":null}]${tail}\n\n`);
    },
    finish() {
      let out = `data: ${h}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]${tail}\n\n`;
      if (withUsage) {
        out += `data: ${h}[],"usage":{"prompt_tokens":100,"completion_tokens":${tokens},"total_tokens":${tokens + 100}}}\n\n`;
      }
      writeChunk(socket, `${out}data: [DONE]\n\n`);
      res.end();
    },
  };
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  // the status line and headers go out now, so the chunks written to the socket come after them
  res.flushHeaders();
  writeChunk(
    socket,
    `data: ${h}[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]${tail}\n\n`,
  );
  const slot = slots[nextSlot++ % SLOTS];
  slot.add(stream);
  res.on("close", () => slot.delete(stream));
}

let slotIndex = 0;
setInterval(() => {
  const slot = slots[slotIndex++ % SLOTS];
  const now = wallMs();
  for (const s of slot) {
    // a stream due several times over (the process was descheduled) writes every token it owes, one chunk each
    while (s.left > 0 && s.due <= now) {
      s.write();
      s.left--;
      s.due += s.intervalMs;
    }
    if (s.left === 0) {
      slot.delete(s);
      s.finish();
    }
  }
}, TICK_MS);

const server = createServer((req, res) => {
  res.on("error", () => {});
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400).end();
      return;
    }
    const ask = /stream (\d+) (\d+)/.exec(JSON.stringify(body.messages?.at(-1) ?? ""));
    const tokens = ask ? Number(ask[1]) : 20;
    const rate = ask ? Number(ask[2]) : 50;
    startStream(res, tokens, rate, body.stream_options?.include_usage === true);
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ baseUrl: `http://127.0.0.1:${server.address().port}/v1` })}\n`);
});
process.stdin.setEncoding("utf8").on("data", (d) => {
  if (d.includes("cpu")) {
    const u = process.cpuUsage();
    process.stdout.write(`${JSON.stringify({ cpuMs: (u.user + u.system) / 1000 })}\n`);
  }
});
const stop = () => {
  server.closeAllConnections();
  process.exit(0);
};
process.stdin.on("end", stop);
process.on("SIGTERM", stop);
