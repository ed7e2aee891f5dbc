/*
 * What the gateway logs about connections and runs, checked on a real gateway (loopback port, SQLite in a temp dir)
 * whose logger writes JSON lines into an array: who connected, why each socket closed, and each run's accepted,
 * started and ended lines — never the token or the message text.
 */

import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/infra/logger.js";
import {
  connectedPeer,
  pausablePeer,
  RawPeer,
  removeTempDirs,
  startTestGateway,
  type TestGateway,
  TestProvider,
  type TestTurn,
  WAIT_MS,
} from "../fixtures/gateway/harness.js";

type Line = Record<string, unknown> & { level: string; msg: string };

const running: TestGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.gw.close("test done");
});
afterAll(() => removeTempDirs());

async function gateway(opts: Parameters<typeof startTestGateway>[0] = {}) {
  const raw: string[] = [];
  const logger = createLogger({ level: "info", format: "json", write: (line) => raw.push(line) });
  const g = await startTestGateway({ ...opts, gateway: { logger, ...opts.gateway } });
  running.push(g);
  const lines = () => raw.map((l) => JSON.parse(l) as Line);
  return { ...g, raw, lines };
}

async function waitFor(lines: () => Line[], match: (l: Line) => boolean, what: string): Promise<Line> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const found = lines().find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no log line ${what}; got:\n${JSON.stringify(lines(), null, 1)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const disconnectOf = (conn: unknown) => (l: Line) => l.msg === "disconnect" && l.conn === conn;

describe("gateway log lines", () => {
  it("logs a connect with client, mode, role, scopes and address, and a disconnect the client caused", async () => {
    const { url, lines } = await gateway();
    const peer = await connectedPeer(url, { client: { id: "bridge", mode: "backend" } });
    const connect = await waitFor(lines, (l) => l.msg === "connect", "connect");
    expect(connect).toMatchObject({
      level: "info",
      client: "bridge",
      mode: "backend",
      role: "operator",
      scopes: expect.any(Number),
      remote: "127.0.0.1",
    });
    expect(connect.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    peer.close();
    const gone = await waitFor(lines, disconnectOf(connect.conn), "disconnect");
    expect(gone).toMatchObject({ level: "info", client: "bridge", mode: "backend", reason: "client closed" });
  });

  it("names why the gateway closed a socket: auth failed, protocol error, handshake timeout, shutdown", async () => {
    const g = await gateway({ gateway: { token: "s3cret-token", handshakeTimeoutMs: 300 } });
    const wrong = await RawPeer.open(g.url);
    await wrong.connect({ token: "wrong-token" });
    await wrong.closed;
    const garbage = await RawPeer.open(g.url);
    garbage.sendRaw("not json");
    await garbage.closed;
    const silent = await RawPeer.open(g.url);
    await silent.closed;
    await connectedPeer(g.url, { token: "s3cret-token" });
    await g.gw.close("test stop");

    const reasons = g
      .lines()
      .filter((l) => l.msg === "disconnect")
      .map((l) => [l.reason, l.code]);
    expect(reasons).toEqual([
      ["auth failed", 1008],
      ["protocol error", 1008],
      ["handshake timeout", 1008],
      ["shutdown", 1001],
    ]);
    expect(g.raw.join("\n")).not.toMatch(/s3cret-token|wrong-token|not json/);
  });

  it("logs a run's accepted, started and ended lines with status, duration, tokens and model", async () => {
    const { url, lines, raw } = await gateway();
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "a private question", idempotencyKey: "run-1", sessionKey: "s1" });
    await peer.response(id, 2);
    const ended = await waitFor(lines, (l) => l.msg === "run ended", "run ended");
    const runLines = lines().filter((l) => l.runId === "run-1");
    expect(runLines.map((l) => l.msg)).toEqual(["run accepted", "run started", "run ended"]);
    expect(runLines[0]).toMatchObject({ session: "agent:main:s1", receipt: "started" });
    expect(ended).toMatchObject({
      level: "info",
      session: "agent:main:s1",
      status: "ok",
      durationMs: expect.any(Number),
      tokensIn: 10,
      tokensOut: 5,
      model: "t/m",
    });
    expect(raw.join("\n")).not.toContain("private question");
  });

  it("logs a failed run at error level with the error message", async () => {
    const failing: TestTurn = { error: { kind: "bad_request", message: "the model refused the request" } };
    const { url, lines } = await gateway({ provider: new TestProvider(() => failing) });
    const peer = await connectedPeer(url);
    await peer.response(peer.send("agent", { message: "hi", idempotencyKey: "bad-1" }), 2);
    const ended = await waitFor(lines, (l) => l.msg === "run ended", "run ended");
    expect(ended).toMatchObject({
      level: "error",
      runId: "bad-1",
      status: "error",
      error: expect.stringContaining("the model refused the request"),
    });
  });

  it("logs a client dropped for not reading as a warning and a disconnect for a slow reader", async () => {
    const big = "x".repeat(200 * 1024);
    const { url, lines } = await gateway({
      provider: new TestProvider(() => ({ before: [big] })),
      gateway: { maxBufferedBytes: 1024 * 1024 },
    });
    const { peer: slow, socket } = pausablePeer(url);
    await slow.opened;
    await slow.connect({ client: { id: "sleepy" } });
    await slow.response(slow.send("agent", { message: "big", idempotencyKey: "big-1", sessionKey: "big" }), 2);
    socket().pause();
    // far more history than the kernel buffers hold, and nobody reads it
    for (let i = 0; i < 60; i++) slow.send("chat.history", { sessionKey: "big" });
    const dropped = await waitFor(lines, (l) => l.msg === "slow reader dropped", "slow reader dropped");
    expect(dropped).toMatchObject({ level: "warn", client: "sleepy", limit: 1024 * 1024 });
    const gone = await waitFor(lines, disconnectOf(dropped.conn), "disconnect");
    expect(gone).toMatchObject({ client: "sleepy", reason: "slow reader" });
    socket().resume();
  });
});
