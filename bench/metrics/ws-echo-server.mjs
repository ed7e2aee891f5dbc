// Helper for floor-ws.mjs: a WebSocket server (the `ws` library the gateway uses) that parses each frame and
// answers it, in its own process like a gateway. Prints its port; exits when stdin closes.
import { WebSocketServer } from "ws";

const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
wss.on("connection", (socket) => {
  socket.on("message", (data) => {
    const frame = JSON.parse(data.toString());
    socket.send(JSON.stringify({ type: "res", id: frame.id, ok: true, payload: { echo: frame.params } }));
  });
});
wss.on("listening", () => process.stdout.write(`${JSON.stringify({ port: wss.address().port })}\n`));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
