// Drives a running gateway over WebSocket with the Loopgate gateway client, from its own process.
//   mode "latency":    one session at a time, `agent` → final, sequential; sessions rotate every 10 turns so the
//                      history stays short (as in the embedded figure). Options: { turns, warmup }.
//   mode "throughput": `sessions` sessions at once, one connection each, `turns` sequential turns per session;
//                      turns/s from the first send to the last final. Options: { sessions, turns, repeats, urls }
//                      (urls: several gateway nodes; connection i goes to urls[i % urls.length], default [url]).
//   mode "paced":      open loop, the same offered load on every node: `rate` turns/s per node, each node's turns on
//                      `sessionsPerNode` connections of its own (sessions it owns). `warmupTurns` per node unmeasured,
//                      then `repeats` × `turns` per node, each repeat with the nodes' CPU (/proc of `pids`) over it.
//                      Options: { urls, pids, rate, sessionsPerNode, warmupTurns, turns, repeats }.
import { GatewayClient } from "../../dist/client/index.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { cpuMsOf } from "../lib/gateway.mjs";
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
} else if (opts.mode === "paced") {
  const urls = opts.urls ?? [opts.url];
  const pids = opts.pids ?? [];
  const rate = opts.rate ?? 5;
  const perNode = opts.sessionsPerNode ?? 4;
  const interval = 1000 / rate;
  // nodes × connections; connection (n, k) goes to node n only, so every session it opens is owned by node n
  const clients = await Promise.all(
    urls.map((url) =>
      Promise.all(Array.from({ length: perNode }, () => GatewayClient.connect({ url, scopes: ["operator.write"] }))),
    ),
  );
  // a connection's sessions rotate every 10 turns, as in the latency mode: the history stays short and equal in
  // every configuration; `used` counts turns per connection over the whole run
  const used = clients.map((cs) => cs.map(() => 0));
  const sessionOf = (n, k) => `pc-${tag}-${n}-${k}-${Math.floor(used[n][k]++ / 10)}`;
  // One phase: every node gets `count` turns, turn j at start + j × interval (node n offset by n / N of an interval,
  // so the nodes' turns interleave instead of arriving together); a turn whose connection is still busy waits for it
  // (counted as late: the offered load was not met).
  async function phase(count) {
    const start = nowMs() + 20;
    const latencies = [];
    let late = 0;
    await Promise.all(
      clients.map(async (cs, n) => {
        const busy = cs.map(() => Promise.resolve());
        const runs = [];
        for (let j = 0; j < count; j++) {
          const due = start + (j + n / urls.length) * interval;
          const wait = due - nowMs();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const k = j % perNode;
          const prev = busy[k];
          const run = prev.then(async () => {
            const t0 = nowMs();
            if (t0 - due > interval) late++;
            await turn(cs[k], sessionOf(n, k));
            latencies.push(nowMs() - t0);
          });
          busy[k] = run;
          runs.push(run);
        }
        await Promise.all(runs);
      }),
    );
    return { seconds: (nowMs() - start) / 1000, latencies, late };
  }
  await phase(opts.warmupTurns ?? 20);
  const repeats = [];
  for (let r = 0; r < (opts.repeats ?? 3); r++) {
    const cpu0 = pids.map((pid) => cpuMsOf(pid));
    const p = await phase(opts.turns ?? 100);
    const cpuMs = pids.map((pid, i) => cpuMsOf(pid) - cpu0[i]);
    repeats.push({
      seconds: p.seconds,
      cpuMs,
      late: p.late,
      offered: rate * urls.length,
      achieved: ((opts.turns ?? 100) * urls.length) / p.seconds,
      turnMs: summarize(p.latencies),
    });
  }
  await Promise.all(clients.flat().map((c) => c.close()));
  emitResult({ repeats, rate, sessionsPerNode: perNode, turns: opts.turns ?? 100 });
} else {
  throw new Error(`unknown mode ${opts.mode}`);
}
