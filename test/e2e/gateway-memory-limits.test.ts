/*
 * Issue 25 item 4: what one authenticated client can make the gateway hold. A history page of big rows, a reader
 * that stops reading, connections per token and in total, image attachments, message subscriptions. Each case is
 * a real gateway on a real SQLite store, over real WebSockets.
 */
import { describe, expect, it } from "vitest";
import { normalizeSessionKey } from "../../src/session/keys.js";
import {
  connectedPeer,
  pausablePeer,
  RawPeer,
  type TestGateway,
  useTestGateways,
  WAIT_MS,
} from "../fixtures/gateway/harness.js";
import { bombPng, noisePng, watchSharp } from "../fixtures/images.js";

const gateway = useTestGateways();
const MiB = 1024 * 1024;

/** A session whose transcript is `rows` user rows of `rowBytes` characters each, written through the store. */
async function bigRowSession(g: TestGateway, name: string, rows: number, rowBytes: number): Promise<string> {
  const key = normalizeSessionKey(name, "main").key;
  const store = g.gw.service.rt.store;
  await store.ensureSession(key, "main", Date.now());
  for (let i = 0; i < rows; i++) {
    const text = `${i} `.padEnd(rowBytes, "x");
    await store.appendTranscript([
      { sessionKey: key, kind: "message", createdAt: Date.now(), message: { role: "user", content: text } },
    ]);
  }
  return key;
}

/** Counts the bytes of transcript rows the gateway's handlers read from the store. */
function countTranscriptReads(g: TestGateway): { bytes: number } {
  const counter = { bytes: 0 };
  const sessions = g.gw.service.sessions;
  const read = sessions.readTranscript.bind(sessions);
  sessions.readTranscript = async (key, opts) => {
    const rows = await read(key, opts);
    for (const r of rows) counter.bytes += Buffer.byteLength(JSON.stringify(r));
    return rows;
  };
  return counter;
}

/** ms from `t0` until the gateway has no connection left, or undefined if it still has one after WAIT_MS */
async function gatewayDropsAll(g: TestGateway, t0: number): Promise<number | undefined> {
  while (g.gw.connectionCount > 0) {
    if (Date.now() - t0 > WAIT_MS) return undefined;
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - t0;
}

describe("chat.history of big rows", () => {
  it("history-page-reads-one-page-of-big-rows: one page reads about a page of rows from the store, not 32 of them", async () => {
    const g = await gateway();
    const key = await bigRowSession(g, "big", 12, 1 * MiB);
    const reads = countTranscriptReads(g);
    const peer = await connectedPeer(g.url);
    const res = await peer.call("chat.history", { sessionKey: key, limit: 32 });
    expect(res.error).toBeUndefined();
    const messages = res.payload?.messages as unknown[];
    console.log(
      `[history] rows=12x1MiB page rows=${messages.length} readFromStore=${(reads.bytes / MiB).toFixed(1)}MiB maxPageBytes=2MiB`,
    );
    // the page holds one 1 MiB row (two do not fit in 2 MiB); the store may be read for one more row than fits
    expect(messages.length).toBe(1);
    expect(res.payload?.nextCursor).toEqual(expect.any(String));
    expect(reads.bytes).toBeLessThanOrEqual(2 * MiB + 1 * MiB + 64 * 1024);
    peer.close();
  });
});

describe("a reader that stops reading", () => {
  it("slow-reader-cut-after-grace-with-no-further-frames: a stalled reader over the limit is cut when the grace ends, not at the next frame", async () => {
    // the limit is 4 MiB (the ceiling that drops at once is 16 MiB); the grace is 1 s; no tick comes (60 s)
    const g = await gateway({ gateway: { maxBufferedBytes: 4 * MiB, slowConsumerMs: 1000 } });
    const key = await bigRowSession(g, "stall", 3, 600 * 1024);
    const { peer, socket } = pausablePeer(g.url);
    await peer.opened;
    expect((await peer.connect()).ok).toBe(true);
    socket().pause();
    // 8 pages of about 1.8 MB: about 4 MB fit in the kernel's buffers, the rest (over the limit, under the
    // ceiling) waits in the gateway; then nothing more is sent to this client
    const t0 = Date.now();
    for (let i = 0; i < 8; i++) peer.send("chat.history", { sessionKey: key, limit: 3 });
    // the client does not read, so it cannot see the close: the gateway's side is watched
    const closed = await gatewayDropsAll(g, t0);
    console.log(
      `[slow-reader] stalled reader disconnected after ${closed ?? `more than ${WAIT_MS}`} ms (grace 1000 ms)`,
    );
    expect(closed).toBeDefined();
    socket().resume();
    await peer.closed;
  });
});

describe("connections past connect", () => {
  it("connections-capped-per-token-and-in-total: a connect over gateway.maxConnectionsPerToken or gateway.maxConnections is refused, retryable, naming the setting", async () => {
    const scopes = ["operator.read", "operator.write"];
    const g = await gateway({
      config: {
        gateway: {
          maxConnections: 3,
          maxConnectionsPerToken: 2,
          auth: {
            tokens: [
              { token: "token-a", scopes },
              { token: "token-b", scopes },
            ],
          },
        },
      },
    });
    const a1 = await connectedPeer(g.url, { token: "token-a" });
    await connectedPeer(g.url, { token: "token-a" });
    const a3 = new RawPeer(g.url);
    const refusedA = await a3.connect({ token: "token-a" });
    expect(refusedA.error).toMatchObject({ code: "unavailable", retryable: true });
    expect(refusedA.error?.message).toContain("gateway.maxConnectionsPerToken is 2");
    expect((await a3.closed).code).toBe(1013);
    await connectedPeer(g.url, { token: "token-b" });
    const b2 = new RawPeer(g.url);
    const refusedTotal = await b2.connect({ token: "token-b" });
    expect(refusedTotal.error?.message).toContain("gateway.maxConnections is 3");
    expect(refusedTotal.error?.message).not.toContain("token-b");
    // a closed connection frees its place
    a1.close();
    await a1.closed;
    await waitFor(() => g.gw.connectionCount === 2);
    const again = await connectedPeer(g.url, { token: "token-b" });
    expect((await again.call("health")).ok).toBe(true);
  });
});

describe("sessions.messages.subscribe", () => {
  it("message-subscriptions-capped-per-connection: following more sessions than gateway.maxMessageSubscriptionsPerConnection is refused, naming the setting", async () => {
    const g = await gateway({ config: { gateway: { maxMessageSubscriptionsPerConnection: 3 } } });
    const peer = await connectedPeer(g.url);
    for (const key of ["s1", "s2", "s3"])
      expect((await peer.call("sessions.messages.subscribe", { key })).ok).toBe(true);
    const over = await peer.call("sessions.messages.subscribe", { key: "s4" });
    expect(over.error?.code).toBe("invalid_request");
    expect(over.error?.message).toContain("params.key: this connection already follows 3 sessions");
    expect(over.error?.message).toContain("gateway.maxMessageSubscriptionsPerConnection is 3");
    // following one again costs nothing; unsubscribing frees a place; the connection keeps working
    expect((await peer.call("sessions.messages.subscribe", { key: "s1" })).ok).toBe(true);
    expect((await peer.call("sessions.messages.unsubscribe", { key: "s1" })).ok).toBe(true);
    expect((await peer.call("sessions.messages.subscribe", { key: "s4" })).ok).toBe(true);
    // the limit is per connection
    const other = await connectedPeer(g.url);
    expect((await other.call("sessions.messages.subscribe", { key: "s5" })).ok).toBe(true);
  });
});

describe("image attachments", () => {
  it("image-bombs-decoded-a-few-at-a-time: concurrent image attachments never decode more than gateway.attachments.imageConcurrency at once", async () => {
    const g = await gateway({ config: { gateway: { attachments: { imageConcurrency: 1 } } } });
    const bomb = await bombPng(3000);
    const peers = await Promise.all(Array.from({ length: 4 }, () => connectedPeer(g.url)));
    const watch = watchSharp();
    const ids = peers.map((p, i) =>
      p.send("agent", {
        message: `bomb ${i}`,
        idempotencyKey: `bomb-${i}`,
        sessionKey: `bomb-${i}`,
        attachments: [{ type: "image", mimeType: "image/png", content: bomb }],
      }),
    );
    const answers = await Promise.all(peers.map((p, i) => p.response(ids[i])));
    const seen = watch.stop();
    console.log(
      `[image-bombs] 4 messages of one ${bomb.length} B base64 PNG (3000x3000): sharp tasks at once max=${seen}`,
    );
    for (const a of answers) expect(a.payload).toMatchObject({ status: "accepted" });
    expect(seen).toBe(1);
  });

  it("attachment-bytes-capped-per-connection: a second message while the first one's images are prepared is refused over gateway.attachments.maxInFlightBytesPerConnection", async () => {
    const g = await gateway({ config: { gateway: { attachments: { maxInFlightBytesPerConnection: 10 * MiB } } } });
    // 1,500 px of noise: about 6.75 MB that must be scaled and re-encoded, so the first is still being prepared
    // when the second arrives
    const image = await noisePng(1500);
    const bytes = Buffer.from(image, "base64").length;
    // one fits under the cap, two do not
    expect(bytes).toBeGreaterThan(5 * MiB);
    expect(bytes).toBeLessThan(10 * MiB);
    const peer = await connectedPeer(g.url);
    // two sessions: a session's messages are admitted one at a time (the intake's per-session lane), so a second
    // message of the same session waits for the first instead of preparing beside it; the cap is per connection
    const send = (i: number) =>
      peer.send("agent", {
        message: `picture ${i}`,
        idempotencyKey: `pic-${i}`,
        sessionKey: `pics-${i}`,
        attachments: [{ type: "image", mimeType: "image/png", content: image }],
      });
    const first = send(1);
    const second = send(2);
    const [a, b] = await Promise.all([peer.response(first), peer.response(second)]);
    expect(a.payload).toMatchObject({ status: "accepted" });
    expect(b.error).toMatchObject({ code: "unavailable", retryable: true });
    expect(b.error?.message).toContain("params.attachments:");
    expect(b.error?.message).toContain("gateway.attachments.maxInFlightBytesPerConnection");
    // once the first is in, the same send goes through
    expect((await peer.response(send(3))).payload).toMatchObject({ status: "accepted" });
  });
});

async function waitFor(ok: () => boolean): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > WAIT_MS) throw new Error("timed out waiting for a condition");
    await new Promise((r) => setTimeout(r, 10));
  }
}
