/*
 * What a client that never authenticates can cost the gateway: at most the pre-auth frame limit per connection,
 * enforced while a frame arrives, and a bounded number of such connections (in total and per address).
 */
import crypto from "node:crypto";
import net from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  type ChildGateway,
  procStatusBytes,
  resetPeakRss,
  startChildGateway,
} from "../fixtures/gateway/child-gateway.js";
import {
  connectedPeer,
  RawPeer,
  removeTempDirs,
  startTestGateway,
  type TestGateway,
  useTestGateways,
} from "../fixtures/gateway/harness.js";
import { holdIdleSockets, legitimateConnect } from "../fixtures/gateway/preauth-attack.js";

const MiB = 1024 * 1024;
const ATTACKERS = 200;
const FRAME_BYTES = 24 * MiB;
const RSS_GROWTH_LIMIT = 50 * MiB;
const CHUNK = Buffer.alloc(64 * 1024, 0x61);

/**
 * A raw WebSocket client that upgrades, then streams one masked text frame of `size` bytes (mask 0, so the chunk
 * is reused as is) until it is all sent, the gateway cuts the connection, or `stopped()` says so.
 */
function sendOneHugeFrame(port: number, size: number, stopped: () => boolean): Promise<number> {
  return new Promise((resolve) => {
    let sent = 0;
    let done = false;
    const socket = net.connect({ host: "127.0.0.1", port });
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(sent);
    };
    socket.on("error", finish);
    socket.on("close", finish);
    const key = crypto.randomBytes(16).toString("base64");
    socket.write(
      `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      socket.off("data", onData);
      socket.resume();
      if (!head.startsWith("HTTP/1.1 101")) return finish();
      const header = Buffer.alloc(14);
      header[0] = 0x81; // FIN, text
      header[1] = 0x80 | 127; // masked, 64-bit length
      header.writeBigUInt64BE(BigInt(size), 2); // mask key: bytes 10..13 stay 0
      socket.write(header);
      const pump = () => {
        while (!done && sent < size && !stopped()) {
          sent += CHUNK.length;
          if (!socket.write(CHUNK)) return void socket.once("drain", pump);
        }
        if (!done) finish();
      };
      pump();
    };
    socket.on("data", onData);
  });
}

describe("pre-auth memory", () => {
  let child: ChildGateway | undefined;
  afterAll(() => child?.stop());

  it("pre-auth frames are capped while they are received, not after buffering: 200 strangers sending 24 MiB each add under 50 MB", async () => {
    // caps above the attacker count: what is measured here is the per-connection limit, not the refusal
    child = await startChildGateway({ preAuth: { maxConnections: 256, maxConnectionsPerAddress: 256 } });
    const pid = child.child.pid!;
    // warm the paths an attack takes (upgrade, challenge, a refused frame) before taking the baseline
    await Promise.all(Array.from({ length: 4 }, () => sendOneHugeFrame(child!.port, 256 * 1024, () => false)));
    const baseline = procStatusBytes(pid, "VmRSS");
    const peakResettable = resetPeakRss(pid);
    let sampledPeak = baseline;
    let tooMuch = false;
    // sampled as well, so a gateway that buffers whole frames is stopped before it eats the machine's memory
    const sampler = setInterval(() => {
      sampledPeak = Math.max(sampledPeak, procStatusBytes(pid, "VmRSS"));
      if (sampledPeak - baseline > 2 * RSS_GROWTH_LIMIT) tooMuch = true;
    }, 10);
    const sent = await Promise.all(
      Array.from({ length: ATTACKERS }, () => sendOneHugeFrame(child!.port, FRAME_BYTES, () => tooMuch)),
    );
    clearInterval(sampler);
    const peak = Math.max(sampledPeak, peakResettable ? procStatusBytes(pid, "VmHWM") : 0);
    const growthMB = Math.round((peak - baseline) / MiB);
    console.log(
      `pre-auth: ${ATTACKERS} × 24 MiB frames, ${Math.round(sent.reduce((a, b) => a + b, 0) / MiB)} MiB written by the attackers, gateway RSS ${Math.round(baseline / MiB)} MB → peak ${Math.round(peak / MiB)} MB (+${growthMB} MB)`,
    );
    expect(growthMB).toBeLessThan(RSS_GROWTH_LIMIT / MiB);
    // and it still serves
    const peer = await connectedPeer(child.url);
    expect((await peer.call("health")).ok).toBe(true);
    peer.close();
  });
});

describe("after connect", () => {
  afterEach(() => removeTempDirs());

  it("a connected client may send frames above 64 KiB, up to maxPayload", async () => {
    const tg = await startTestGateway();
    const peer = await connectedPeer(tg.url);
    const res = await peer.call("health", { pad: "x".repeat(1024 * 1024) });
    expect(res.ok).toBe(true);
    peer.close();
    await tg.gw.close();
  });
});

describe("caps on unauthenticated connections", () => {
  let tg: TestGateway | undefined;
  const peers: RawPeer[] = [];
  afterEach(async () => {
    for (const p of peers.splice(0)) p.ws.terminate();
    await tg?.gw.close();
    tg = undefined;
    removeTempDirs();
  });
  const open = async (url: string, localAddress = "127.0.0.1") => {
    const peer = await RawPeer.open(url, { localAddress });
    peers.push(peer);
    await peer.seen((f) => f.event === "connect.challenge");
    return peer;
  };

  /** Makes a peer not silent: the first two bytes of a frame whose rest never comes (a slow sender). */
  const startFrame = (peer: RawPeer) => {
    (peer.ws as unknown as { _socket: { write(b: Buffer): void } })._socket.write(Buffer.from([0x81, 0x85]));
  };

  it("above the per-address cap the oldest silent connection of that address makes room; with none silent the newcomer is refused", async () => {
    tg = await startTestGateway({ config: { gateway: { preAuth: { maxConnectionsPerAddress: 2 } } } });
    const first = await open(tg.url);
    const second = await open(tg.url);
    const elsewhere = await open(tg.url, "127.0.0.2");
    // a third from the address: the oldest silent one of it is closed with the reason, the newcomer gets in
    const third = await open(tg.url);
    expect(await first.closed).toEqual({
      code: 1013,
      reason: "closed for a newcomer: silent while this address's unauthenticated slots were full (limit 2)",
    });
    // when both have started sending, nothing is silent: the newcomer is refused at once, with the reason
    startFrame(second);
    startFrame(third);
    await new Promise((r) => setTimeout(r, 50));
    const fourth = await RawPeer.open(tg.url);
    expect(await fourth.closed).toEqual({
      code: 1013,
      reason: "too many unauthenticated connections from this address (limit 2)",
    });
    // the other address was not touched, and a connection that authenticates no longer counts
    expect((await elsewhere.connect()).ok).toBe(true);
    second.ws.terminate();
    await second.closed;
    const fifth = await open(tg.url);
    expect((await fifth.connect()).ok).toBe(true);
  });

  it("above the total cap the oldest silent connection makes room, whatever its address; with none silent the newcomer is refused", async () => {
    tg = await startTestGateway({ config: { gateway: { preAuth: { maxConnections: 3 } } } });
    const a = await open(tg.url, "127.0.0.1");
    const b = await open(tg.url, "127.0.0.2");
    const c = await open(tg.url, "127.0.0.3");
    const d = await open(tg.url, "127.0.0.4");
    expect(await a.closed).toEqual({
      code: 1013,
      reason: "closed for a newcomer: silent while the gateway's unauthenticated slots were full (limit 3)",
    });
    for (const p of [b, c, d]) startFrame(p);
    await new Promise((r) => setTimeout(r, 50));
    const refused = await RawPeer.open(tg.url, { localAddress: "127.0.0.5" });
    expect(await refused.closed).toEqual({ code: 1013, reason: "too many unauthenticated connections (limit 3)" });
    // a closed one frees its slot
    d.ws.terminate();
    await d.closed;
    await open(tg.url, "127.0.0.5");
  });
});

describe("pre-auth starvation", () => {
  const gateway = useTestGateways();
  const holders: Array<{ stop(): void }> = [];
  afterEach(() => {
    for (const h of holders.splice(0)) h.stop();
  });
  /** waits until the gateway counts `n` unauthenticated connections */
  const pendingReaches = async (tg: TestGateway, n: number) => {
    while (tg.gw.connectionCount < n) await new Promise((r) => setTimeout(r, 10));
  };

  it("preauth-starvation-one-address: 32 idle sockets reopened on close do not lock a local client out", async () => {
    const tg = await gateway();
    const idle = holdIdleSockets(tg.url, "127.0.0.1", 32);
    holders.push(idle);
    await pendingReaches(tg, 32);
    const { outcome, ms } = await legitimateConnect(tg.url);
    console.log(
      `[preauth] 32 idle sockets from 127.0.0.1, reopened on close: a CLI-like connect from 127.0.0.1 got ${outcome} in ${ms} ms`,
    );
    expect(outcome).toBe("hello-ok");
  });

  it("preauth-starvation-global-cap: four addresses of idle sockets do not lock out a fifth", async () => {
    const tg = await gateway();
    for (const address of ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]) {
      holders.push(holdIdleSockets(tg.url, address, 32));
    }
    await pendingReaches(tg, 128);
    const { outcome, ms } = await legitimateConnect(tg.url, "127.0.0.1");
    console.log(`[preauth] 4 × 32 idle sockets: a CLI-like connect from 127.0.0.1 got ${outcome} in ${ms} ms`);
    expect(outcome).toBe("hello-ok");
  });

  it("a socket that sends nothing is closed after gateway.preAuth.silentTimeoutMs, with the reason", async () => {
    const tg = await gateway({ config: { gateway: { preAuth: { silentTimeoutMs: 50 } } } });
    const idle = await RawPeer.open(tg.url);
    expect(await idle.closed).toEqual({ code: 1013, reason: "sent nothing for 50 ms after the upgrade" });
    // a client that sends its connect is not cut
    const peer = await connectedPeer(tg.url);
    await new Promise((r) => setTimeout(r, 100));
    expect((await peer.call("health")).ok).toBe(true);
    peer.close();
  });
});
