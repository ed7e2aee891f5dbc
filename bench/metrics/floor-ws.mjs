// Floor (c): one RPC round trip over a raw WebSocket with the same `ws` library, to a server in another process
// that parses the request and answers it: the least an RPC through the gateway can cost. Options: { rounds, warmup }.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { childOptions, emitResult } from "../lib/child.mjs";
import { nowMs, summarize } from "../lib/stats.mjs";

const opts = childOptions();
const server = spawn(process.execPath, [fileURLToPath(new URL("./ws-echo-server.mjs", import.meta.url))], {
  stdio: ["pipe", "pipe", "inherit"],
});
const port = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("echo server did not start within 10 s")), 10_000);
  server.stdout.setEncoding("utf8").once("data", (d) => {
    clearTimeout(timer);
    resolve(JSON.parse(d).port);
  });
});
const ws = new WebSocket(`ws://127.0.0.1:${port}`);
await new Promise((resolve, reject) => {
  ws.once("open", resolve);
  ws.once("error", reject);
});

let id = 0;
function roundTrip() {
  return new Promise((resolve) => {
    const mine = String(++id);
    ws.once("message", (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.id !== mine) throw new Error("echo out of order");
      resolve();
    });
    ws.send(
      JSON.stringify({
        type: "req",
        id: mine,
        method: "agent",
        params: { message: "hello", sessionKey: "bench-1", idempotencyKey: `k-${mine}` },
      }),
    );
  });
}

for (let i = 0; i < (opts.warmup ?? 200); i++) await roundTrip();
const samples = [];
for (let i = 0; i < (opts.rounds ?? 1000); i++) {
  const t0 = nowMs();
  await roundTrip();
  samples.push(nowMs() - t0);
}
ws.close();
server.stdin.end();
emitResult({ rttMs: summarize(samples) });
