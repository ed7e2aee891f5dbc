// Floor (s) of the streaming bench: the least a gateway could do per streamed token, in its own process. A bare
// relay on the same `ws` library: for each connection's one request it POSTs to the model with `node:http` (the
// cheapest reader measured, and the one the gateway's provider uses; this floor used `fetch` before 2026-12-01, which
// cost ~5 µs more per chunk), splits the SSE body into lines, parses each chunk, and sends every text delta as an
// event frame of the same shape and size as the gateway's `assistant` events (then one final frame). No runtime,
// storage, prompt, projection, chat events, access rules or back-pressure.
// Prints {"url"} once listening; exits when stdin closes. Options: { baseUrl }.
import { request } from "node:http";
import { WebSocketServer } from "ws";
import { childOptions } from "../lib/child.mjs";
import { startProfile } from "../lib/inspector-profile.mjs";
import { startLoopProbe } from "../lib/stream-loop-probe.mjs";

const { baseUrl } = childOptions();
const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
let runs = 0;

async function relay(ws, message) {
  const runId = `relay-${++runs}-00000000-0000-0000-0000-000000000000`;
  const sessionKey = `agent:main:relay-${runs}`;
  let seq = 0;
  const body = JSON.stringify({ model: "fake-model", stream: true, messages: [{ role: "user", content: message }] });
  const res = await new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: "Bearer x",
        "content-length": Buffer.byteLength(body),
      },
    });
    req.once("response", resolve).once("error", reject).end(body);
  });
  res.setEncoding("utf8");
  let buf = "";
  // each network read in its `data` event, as the gateway's provider reads it (no promise per read)
  res.on("data", (text) => {
    buf += text;
    let nl = buf.indexOf("\n");
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      nl = buf.indexOf("\n");
      if (!line.startsWith("data: ") || line.startsWith("data: [DONE]")) continue;
      const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
      if (!delta) continue;
      seq++;
      const payload = JSON.stringify({ runId, seq, stream: "assistant", ts: Date.now(), sessionKey, data: { delta } });
      ws.send(`{"type":"event","event":"agent","payload":${payload},"seq":${seq}}`);
    }
  });
  await new Promise((resolve, reject) => res.once("end", resolve).once("error", reject));
  ws.send(JSON.stringify({ type: "res", id: "final", ok: true, payload: { runId, status: "ok" } }));
}

wss.on("connection", (ws) => {
  ws.on("message", (data) => {
    relay(ws, String(data)).catch((err) => ws.close(1011, String(err.message).slice(0, 100)));
  });
});
wss.on("listening", () => {
  process.stdout.write(`${JSON.stringify({ url: `ws://127.0.0.1:${wss.address().port}` })}\n`);
});
// "loop-start" / "loop-stop" on stdin: the event loop's delay in between, as gateway-host.mjs answers it;
// "profile <file>" / "profile-stop": a CPU profile of the load in between, so the floor's profile compares with the
// gateway's (bench/lib/stream-phases.mjs)
let stopLoopProbe;
let stopProfile = async () => {};
let input = "";
process.stdin.setEncoding("utf8").on("data", (d) => {
  input += d;
  for (let nl = input.indexOf("\n"); nl >= 0; nl = input.indexOf("\n")) {
    const line = input.slice(0, nl).trim();
    input = input.slice(nl + 1);
    if (line === "loop-start") {
      stopLoopProbe = startLoopProbe();
      process.stdout.write(`${JSON.stringify({ loop: true })}\n`);
    } else if (line === "loop-stop") {
      const loopDelayMs = stopLoopProbe?.() ?? null;
      stopLoopProbe = undefined;
      process.stdout.write(`${JSON.stringify({ loopDelayMs })}\n`);
    } else if (line.startsWith("profile ")) {
      void startProfile(line.slice("profile ".length)).then((stop) => {
        stopProfile = stop;
        process.stdout.write(`${JSON.stringify({ profiling: true })}\n`);
      });
    } else if (line === "profile-stop") {
      void stopProfile().then(() => process.stdout.write(`${JSON.stringify({ profiled: true })}\n`));
    }
  }
});
process.stdin.on("end", () => process.exit(0));
