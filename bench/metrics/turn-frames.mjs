// WebSocket frames the gateway sends per warm turn, by frame type and event: what the outbound side of a turn costs.
//   node bench/metrics/turn-frames.mjs      (after `npm run build`; starts its own fake model and gateway host)
// The client is the bench's (GatewayClient, default scopes, as metrics/gateway-client.mjs latency mode); every
// message its socket receives is counted after 30 warm-up turns, over 100 turns, sessions rotating every 10.
import { GatewayClient } from "../../dist/client/index.js";
import { WebSocket } from "../../dist/client/ws-lib.js";
import { startFakeModelProcess } from "../lib/child.mjs";
import { startGatewayHost } from "../lib/gateway-metrics.mjs";

const model = await startFakeModelProcess();
const host = await startGatewayHost(model.baseUrl);
const counts = new Map();
let counting = false;
let bytes = 0;
const emit = WebSocket.prototype.emit;
WebSocket.prototype.emit = function (name, data, ...rest) {
  if (counting && name === "message") {
    const text = String(data);
    bytes += text.length;
    const f = JSON.parse(text);
    const key = f.type === "event" ? `event ${f.event}${f.payload?.stream ? ` (${f.payload.stream})` : ""}` : f.type;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return emit.call(this, name, data, ...rest);
};
try {
  const client = await GatewayClient.connect({ url: host.url });
  let n = 0;
  const turn = (i) =>
    client.agent({ message: "hello", idempotencyKey: `tf-${n++}`, sessionKey: `tf-${Math.floor(i / 10)}` });
  for (let i = 0; i < 30; i++) await turn(i);
  const turns = 100;
  counting = true;
  for (let i = 30; i < 30 + turns; i++) await turn(i);
  counting = false;
  await client.close();
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  console.log(`frames per turn: ${(total / turns).toFixed(2)}, ${(bytes / turns).toFixed(0)} characters per turn`);
  for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1]))
    console.log(`${(v / turns).toFixed(2).padStart(6)}  ${k}`);
} finally {
  await host.stop();
  await model.stop();
}
