// Floor (r): the least a Node process can do to receive N model streams. One raw TCP socket per stream, the HTTP
// request written by hand, and each read only searched for its SSE `data: ` lines to count the tokens: no HTTP parser,
// no text decoding, no JSON, nothing stored and nothing sent on. What this process costs per token is what any
// gateway on this machine pays before doing anything with a token; where it is most of a core, a gateway that also
// stores and forwards each token cannot keep its event loop's turns short at that N.
//
// Options (one JSON argument): { baseUrl, n, tokens, rate, startSpreadMs, warmupMs, windowMs }. Prints one JSON line:
// { n, tokensPerRunPerSecond, cores, cpuUsPerToken, userUsPerToken }.
import net from "node:net";

const o = JSON.parse(process.argv[2]);
const { hostname, port } = new URL(o.baseUrl);
const body = JSON.stringify({
  model: "m",
  stream: true,
  messages: [{ role: "user", content: `stream ${o.tokens} ${o.rate}` }],
});
const request =
  "POST /v1/chat/completions HTTP/1.1\r\n" +
  `host: ${hostname}:${port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let tokens = 0;
let counting = false;
const sockets = [];
const failures = [];
for (let i = 0; i < o.n; i++) {
  const socket = net.connect(Number(port), hostname);
  socket.on("error", (err) => failures.push(err.message));
  socket.on("data", (buf) => {
    if (!counting) return;
    for (let at = buf.indexOf("data: "); at !== -1; at = buf.indexOf("data: ", at + 6)) tokens++;
  });
  socket.write(request);
  sockets.push(socket);
  // the streams start spread over startSpreadMs, as the gateway levels' runs do
  if (i % 50 === 49) await sleep((o.startSpreadMs * 50) / o.n);
}
await sleep(o.warmupMs);
counting = true;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await sleep(o.windowMs);
const cpu = process.cpuUsage(cpu0);
const ms = performance.now() - t0;
counting = false;
for (const s of sockets) s.destroy();
if (failures.length) {
  process.stderr.write(`stream-receive: ${failures.length} sockets failed, first: ${failures[0]}\n`);
  process.exit(1);
}
const us = cpu.user + cpu.system;
process.stdout.write(
  `${JSON.stringify({
    n: o.n,
    tokensPerRunPerSecond: Math.round((tokens / o.n / (ms / 1000)) * 10) / 10,
    cores: Math.round((us / 1000 / ms) * 1000) / 1000,
    cpuUsPerToken: tokens ? Math.round((us / tokens) * 10) / 10 : null,
    userUsPerToken: tokens ? Math.round((cpu.user / tokens) * 10) / 10 : null,
  })}\n`,
);
process.exit(0);
