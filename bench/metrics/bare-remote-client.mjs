// The lower bound of `loopgate agent --url` (bench row cli.remote.bare): a fresh node process that does what the CLI
// does on the wire and nothing else, with the same `ws` library: connect, answer the challenge with a `connect`
// request, send one `agent`, wait for its final response, exit. No Loopgate module, no config read, no output
// formatting: what remains is process start, loading `ws` (and the built-ins it needs) and the gateway's turn.
//   node bench/metrics/bare-remote-client.mjs <ws url> <session key> [<token>]
// Exits 0 once the final arrives with status "ok", 1 on anything else.
import WebSocket from "ws";

const [url, sessionKey, token] = process.argv.slice(2);
// the protocol version the gateway speaks (src/protocol/frames.ts PROTOCOL_VERSION); a mismatch fails the connect
const PROTOCOL = 4;
const ws = new WebSocket(url);
const fail = (why) => {
  process.stderr.write(`bare client: ${why}\n`);
  process.exit(1);
};
ws.on("error", (err) => fail(err.message));
ws.on("message", (data) => {
  const frame = JSON.parse(String(data));
  if (frame.type === "event" && frame.event === "connect.challenge") {
    const params = {
      minProtocol: PROTOCOL,
      maxProtocol: PROTOCOL,
      client: { id: "cli", version: "0", platform: process.platform, mode: "cli" },
      role: "operator",
      scopes: ["operator.write"],
      ...(token ? { auth: { token } } : {}),
    };
    ws.send(JSON.stringify({ type: "req", id: "connect", method: "connect", params }));
  } else if (frame.type === "res" && frame.id === "connect") {
    if (!frame.ok) fail(`connect refused: ${JSON.stringify(frame.error)}`);
    const params = { message: "hello", sessionKey, idempotencyKey: `bare-${sessionKey}` };
    ws.send(JSON.stringify({ type: "req", id: "agent", method: "agent", params }));
  } else if (frame.type === "res" && frame.id === "agent") {
    if (!frame.ok) fail(`agent refused: ${JSON.stringify(frame.error)}`);
    if (frame.payload?.status === "accepted") return;
    if (frame.payload?.status !== "ok") fail(`run ended ${frame.payload?.status}`);
    ws.close();
    process.exitCode = 0;
  }
});
