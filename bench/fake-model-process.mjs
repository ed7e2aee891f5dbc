// The fake model in its own process, as a real model server would be: the code under test and the floor client
// never share an event loop with it. Prints {"baseUrl": ...} once listening; exits when its stdin closes
// (the parent died or is done) or on SIGTERM.
import { startFakeModelServer } from "../dist/testing/fake-model-server.js";
import { benchRespond } from "./lib/model.mjs";

const server = await startFakeModelServer({ respond: benchRespond, captureRequests: false });
process.stdout.write(`${JSON.stringify({ baseUrl: server.baseUrl, pid: process.pid })}\n`);

let closing = false;
const stop = async () => {
  if (closing) return;
  closing = true;
  await server.close();
  process.exit(0);
};
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
