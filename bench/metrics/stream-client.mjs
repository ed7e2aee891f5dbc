// Subscribers for the streaming bench, in their own process: `runs` connections (write scope, as `loopgate agent`
// uses), each starting one run that streams a long reply, and reading every event of it. For every assistant delta
// it decodes the send time stamped into each token by stream-model.mjs and records the lag; it counts the bytes of
// every event frame and checks that each run's events arrive with seq 1, 2, 3, ... (no gap, no reorder).
//   mode "window": prints {"ready": true} once every run has streamed its first token; then "start" on stdin opens
//                  the measuring window and "stop" closes it and prints the figures of the window.
//   mode "whole":  waits for every run's final and prints the bytes and tokens of each whole run.
// Options: { mode, url, runs, tokens, rate, epochMs, startSpreadMs, raw }. `raw`: the server is floor (s), the bare
// relay (stream-relay.mjs): no handshake, the request is the message itself, a `res` frame ends the run.
import { WebSocket } from "ws";
import { GatewayClient } from "../../dist/client/index.js";
import { childOptions } from "../lib/child.mjs";
import { wallMs } from "../lib/stats.mjs";

const opts = childOptions();
const tag = `${process.pid}-${Date.now().toString(36)}`;
const CHAT_PREFIX = '{"type":"event","event":"chat"';
const AGENT_PREFIX = '{"type":"event","event":"agent"';

let measuring = opts.mode === "whole";
const w = { tokens: 0, agentBytes: 0, chatBytes: 0, frames: 0, lagHist: new Map(), lagMax: 0 };
let gaps = 0;
let started = 0;
let failed = 0;
const failures = [];

/** The result line, then exit once it is written (a pipe is asynchronous: exiting at once could cut it short). */
function emitResult(result) {
  process.stdout.write(`\n${JSON.stringify(result)}\n`, () => process.exit(0));
}

/**
 * Lag histogram, buckets of 3 significant digits (0.1 % – 1 % wide, so it stays small even when lags spread over
 * seconds); the p99 over several processes is computed from the merged histograms.
 */
function recordLag(ms) {
  const b = ms <= 0.01 ? 0.01 : Number(ms.toPrecision(3));
  w.lagHist.set(b, (w.lagHist.get(b) ?? 0) + 1);
  if (ms > w.lagMax) w.lagMax = ms;
}

/** The floor's client: the same `ws` library, no protocol beyond what the relay needs. Same shape as GatewayClient. */
function rawClient(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once("error", reject);
    ws.once("open", () =>
      resolve({
        ws,
        agent: (params, { onEvent }) =>
          new Promise((done, fail) => {
            ws.on("message", (data) => {
              const frame = JSON.parse(String(data));
              if (frame.type === "event") onEvent(frame.payload);
              else done(frame.payload);
            });
            ws.once("close", (code) => fail(new Error(`relay closed ${code}`)));
            ws.send(params.message);
          }),
        close: async () => ws.close(),
      }),
    );
  });
}

/** One connection, one run. Resolves with the run's own byte and token counts once its final arrived. */
async function oneRun(i, client, onFirstToken) {
  const own = { tokens: 0, agentBytes: 0, chatBytes: 0 };
  // the raw frames, before the client parses them: what crossed the wire (the WebSocket payload)
  client.ws.on("message", (data) => {
    if (!measuring) return;
    const text = String(data);
    if (text.startsWith(AGENT_PREFIX)) {
      w.agentBytes += data.length;
      own.agentBytes += data.length;
    } else if (text.startsWith(CHAT_PREFIX)) {
      w.chatBytes += data.length;
      own.chatBytes += data.length;
    }
    w.frames++;
  });
  let lastSeq = 0;
  let first = true;
  const final = await client.agent(
    {
      message: `stream ${opts.tokens} ${opts.rate}`,
      idempotencyKey: `sb-${tag}-${i}`,
      sessionKey: `stream-${tag}-${i}`,
    },
    {
      onEvent: (ev) => {
        if (ev.seq !== lastSeq + 1) gaps++;
        lastSeq = ev.seq;
        if (ev.stream !== "assistant") return;
        const now = wallMs();
        if (first) {
          first = false;
          onFirstToken();
        }
        for (const piece of ev.data.delta.split(" ")) {
          if (piece === "") continue;
          const sentAt = opts.epochMs + Number.parseInt(piece, 36) / 10;
          if (measuring) {
            w.tokens++;
            own.tokens++;
            recordLag(now - sentAt);
          }
        }
      },
    },
  );
  if (final.status !== "ok") throw new Error(`run ${i}: ${final.status} ${final.error ?? ""}`);
  await client.close();
  return own;
}

const runs = opts.runs;
let firstTokens = 0;
let readyResolve;
const ready = new Promise((r) => {
  readyResolve = r;
});
const onFirstToken = () => {
  if (++firstTokens === runs) readyResolve();
};
const spread = opts.startSpreadMs ?? 0;
// connect in small batches: the gateway caps connections that have not completed the handshake (32 per address)
const BATCH = 16;
const clients = [];
for (let i = 0; i < runs; i += BATCH) {
  const batch = Array.from({ length: Math.min(BATCH, runs - i) }, () =>
    opts.raw
      ? rawClient(opts.url)
      : GatewayClient.connect({ url: opts.url, scopes: ["operator.write"], connectTimeoutMs: 60_000 }),
  );
  clients.push(...(await Promise.all(batch)));
}
const finals = [];
for (const [i, client] of clients.entries()) {
  const p = oneRun(i, client, onFirstToken);
  p.catch((err) => {
    failed++;
    if (failures.length < 3) failures.push(err.message.slice(0, 200));
    onFirstToken();
  });
  finals.push(p);
  started++;
  // runs start spread over `startSpreadMs`, as a real load would arrive, not all in the same millisecond
  if (spread > 0 && i % BATCH === BATCH - 1) await new Promise((r) => setTimeout(r, (spread * BATCH) / runs));
}

if (opts.mode === "whole") {
  const results = await Promise.allSettled(finals);
  emitResult({
    runs: results.filter((r) => r.status === "fulfilled").map((r) => r.value),
    gaps,
    failed,
    failures,
  });
} else {
  await Promise.race([ready, Promise.allSettled(finals)]);
  process.stdout.write(`${JSON.stringify({ ready: true, firstTokens, failed, failures })}\n`);
  let windowStart = 0;
  process.stdin.setEncoding("utf8").on("data", (d) => {
    if (d.includes("start")) {
      measuring = true;
      windowStart = wallMs();
    }
    if (d.includes("stop")) {
      measuring = false;
      emitResult({
        windowMs: wallMs() - windowStart,
        tokens: w.tokens,
        agentBytes: w.agentBytes,
        chatBytes: w.chatBytes,
        frames: w.frames,
        lagHist: [...w.lagHist],
        lagMaxMs: w.lagMax,
        gaps,
        started,
        failed,
        failures,
      });
    }
  });
}
