// Drives a running gateway over WebSocket with the Loopgate gateway client, from its own process.
//   mode "latency":    one session at a time, `agent` → final, sequential; sessions rotate every 10 turns so the
//                      history stays short (as in the embedded figure). Options: { turns, warmup }.
//   mode "throughput": `sessions` sessions at once, one connection each, `turns` sequential turns per session;
//                      turns/s from the first send to the last final. Options: { sessions, turns, repeats, urls }
//                      (urls: several gateway nodes; connection i goes to urls[i % urls.length], default [url]).
import { GatewayClient } from "../../dist/client/index.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { FINAL_TEXT } from "../lib/model.mjs";
import { median, nowMs, summarize } from "../lib/stats.mjs";

const opts = childOptions();
const tag = `${process.pid}-${Date.now()}`;
let n = 0;

async function turn(client, sessionKey) {
  const final = await client.agent({ message: "hello", idempotencyKey: `gw-${tag}-${n++}`, sessionKey });
  if (final.status !== "ok" || final.result?.payloads?.[0]?.text !== FINAL_TEXT) {
    throw new Error(`turn failed: ${JSON.stringify(final).slice(0, 500)}`);
  }
}

if (opts.mode === "latency") {
  const client = await GatewayClient.connect({ url: opts.url });
  const perSession = 10;
  const warmup = opts.warmup ?? 30;
  for (let i = 0; i < warmup; i++) await turn(client, `lat-${tag}-${Math.floor(i / perSession)}`);
  const samples = [];
  for (let i = warmup; i < warmup + (opts.turns ?? 200); i++) {
    const t0 = nowMs();
    await turn(client, `lat-${tag}-${Math.floor(i / perSession)}`);
    samples.push(nowMs() - t0);
  }
  await client.close();
  emitResult({ turnMs: summarize(samples) });
} else if (opts.mode === "throughput") {
  const sessions = opts.sessions ?? 8;
  const turns = opts.turns ?? 5;
  // Each connection is one session's client and asks for write scope only, as `loopgate agent` does: it receives its
  // own session's events. (With operator.read/admin every connection would also receive every other session's
  // events — the fan-out an operator dashboard pays for, not a chat client.)
  // Connected 16 at a time: the gateway closes connections beyond 32 unauthenticated ones per address (1013).
  const urls = opts.urls ?? [opts.url];
  const clients = [];
  for (let i = 0; i < sessions; i += 16) {
    const batch = Array.from({ length: Math.min(16, sessions - i) }, (_, j) =>
      GatewayClient.connect({ url: urls[(i + j) % urls.length], scopes: ["operator.write"] }),
    );
    clients.push(...(await Promise.all(batch)));
  }
  // one unmeasured turn per connection: handshakes and the gateway's first-turn work are not throughput
  if (opts.warm !== false) await Promise.all(clients.map((c, s) => turn(c, `warm-${tag}-${s}`)));
  const rates = [];
  for (let r = 0; r < (opts.repeats ?? 1); r++) {
    const t0 = nowMs();
    await Promise.all(
      clients.map(async (c, s) => {
        for (let i = 0; i < turns; i++) await turn(c, `tp-${tag}-${r}-${s}`);
      }),
    );
    rates.push((sessions * turns) / ((nowMs() - t0) / 1000));
  }
  await Promise.all(clients.map((c) => c.close()));
  emitResult({ turnsPerSecond: median(rates), rates, sessions, turns });
} else {
  throw new Error(`unknown mode ${opts.mode}`);
}
