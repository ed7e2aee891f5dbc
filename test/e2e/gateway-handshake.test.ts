/*
 * The gateway's front door: challenge/connect/hello-ok, tokens, device signatures, protocol range, frame limits,
 * malformed traffic, ticks and per-connection seq, and HTTP on the same port. Real sockets on an ephemeral
 * loopback port; the state lives in a temp dir.
 */
import http from "node:http";
import { describe, expect, it } from "vitest";
import { GatewayRequestError } from "../../src/client/errors.js";
import { GatewayClient } from "../../src/client/gateway-client.js";
import { createDeviceIdentity } from "../../src/protocol/device.js";
import { GATEWAY_EVENTS, GATEWAY_METHODS } from "../../src/protocol/frames.js";
import { connectedPeer, RawPeer, startTestGateway, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

function httpGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        let body = "";
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on("error", reject);
  });
}

describe("gateway handshake", () => {
  it("sends connect.challenge on open and answers connect with hello-ok listing every method and event", async () => {
    const { url } = await gateway();
    const peer = await RawPeer.open(url);
    const hello = await peer.connect();
    const challenge = peer.frames[0];
    expect(challenge).toMatchObject({ type: "event", event: "connect.challenge", seq: 1 });
    expect(typeof challenge.payload?.nonce).toBe("string");
    expect(typeof challenge.payload?.ts).toBe("number");
    expect(hello.ok).toBe(true);
    expect(hello.payload).toMatchObject({
      type: "hello-ok",
      protocol: 4,
      server: { version: expect.any(String), connId: expect.any(String) },
      auth: { role: "operator", scopes: expect.arrayContaining(["operator.admin"]) },
      policy: {
        maxPayload: 25 * 1024 * 1024,
        maxBufferedBytes: 8 * 1024 * 1024,
        tickIntervalMs: 60_000,
        attachments: { maxBytes: 20 * 1024 * 1024, maxImageBytes: 20 * 1024 * 1024 },
      },
    });
    const features = hello.payload?.features as { methods: string[]; events: string[] };
    expect(features.methods.sort()).toEqual([...GATEWAY_METHODS].sort());
    expect(features.events.sort()).toEqual([...GATEWAY_EVENTS].sort());
    // every advertised method is really served
    for (const m of features.methods) {
      const res = await peer.call(m, {});
      expect(res.error?.code, m).not.toBe("unknown_method");
    }
    peer.close();
  });

  it("accepts the right token and refuses a wrong or missing one, closing only that socket", async () => {
    const { url } = await gateway({ gateway: { token: "s3cret" } });
    const good = await connectedPeer(url, { token: "s3cret" });

    const wrong = await RawPeer.open(url);
    const refused = await wrong.connect({ token: "s3cret-not" });
    expect(refused.ok).toBe(false);
    expect(refused.error).toMatchObject({
      code: "unauthorized",
      message: expect.stringContaining("params.auth.token"),
    });
    expect((await wrong.closed).code).toBe(1008);

    const missing = await RawPeer.open(url);
    const refused2 = await missing.connect();
    expect(refused2.error).toMatchObject({ code: "unauthorized", message: expect.stringContaining("required") });
    await missing.closed;

    // the good connection is untouched
    const health = await good.call("health");
    expect(health.payload).toMatchObject({ ok: true });
    good.close();
  });

  it("refuses any frame before connect, and the gateway keeps serving others", async () => {
    const { url } = await gateway();
    const early = await RawPeer.open(url);
    const res = await early.call("health");
    expect(res.ok).toBe(false);
    expect(res.error).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("first frame must be a connect"),
    });
    expect((await early.closed).code).toBe(1008);

    const garbage = await RawPeer.open(url);
    garbage.sendRaw("{not json");
    const bad = await garbage.seen((f) => f.type === "res", "an error response");
    expect(bad.error?.code).toBe("invalid_request");
    expect(bad.error?.message).toMatch(/malformed JSON/);
    await garbage.closed;

    const fine = await connectedPeer(url);
    expect((await fine.call("health")).ok).toBe(true);
    fine.close();
  });

  it("refuses an unsupported protocol range with the version it speaks", async () => {
    const { url } = await gateway();
    const old = await RawPeer.open(url);
    const res = await old.connect({ minProtocol: 1, maxProtocol: 3 });
    expect(res.ok).toBe(false);
    expect(res.error?.message).toMatch(/protocol mismatch.*1\.\.3.*4/);
    expect(res.error?.details).toEqual({ expectedProtocol: 4 });
    await old.closed;
  });

  it("accepts a correctly signed device identity", async () => {
    const { url } = await gateway({ gateway: { token: "tok" } });
    const device = createDeviceIdentity();
    const peer = await RawPeer.open(url);
    const hello = await peer.connect({
      token: "tok",
      device,
      scopes: ["operator.read", "operator.write"],
      client: { deviceFamily: "Desktop" },
    });
    expect(hello.ok).toBe(true);
    expect(hello.payload?.auth).toEqual({ role: "operator", scopes: ["operator.read", "operator.write"] });
    peer.close();
  });

  it("device-v3-empty-family-accepted: without a device family, OpenClaw's v2 payload and v3 with an empty family are accepted; v3 with a family only when it was sent", async () => {
    const { url } = await gateway({ gateway: { token: "tok" } });
    const device = createDeviceIdentity();
    const signed = async (payload: (nonce: string, signedAt: number) => string, client: Record<string, unknown>) => {
      const peer = await RawPeer.open(url);
      const challenge = await peer.seen((f) => f.event === "connect.challenge");
      const nonce = String(challenge.payload?.nonce);
      const signedAt = Date.now();
      const res = await peer.call("connect", {
        minProtocol: 4,
        maxProtocol: 4,
        client: { id: "openclaw-control-ui", version: "1", platform: "web", mode: "webchat", ...client },
        role: "operator",
        scopes: ["operator.admin"],
        auth: { token: "tok", password: "tok" },
        device: {
          id: device.id,
          publicKey: device.publicKey,
          signature: device.sign(payload(nonce, signedAt)),
          signedAt,
          nonce,
        },
      });
      peer.close();
      return res;
    };
    const v2 = (nonce: string, at: number) =>
      `v2|${device.id}|openclaw-control-ui|webchat|operator|operator.admin|${at}|tok|${nonce}`;
    const v3 = (nonce: string, at: number) =>
      `v3|${device.id}|openclaw-control-ui|webchat|operator|operator.admin|${at}|tok|${nonce}|web|browser`;
    expect((await signed(v2, {})).ok).toBe(true);
    expect((await signed(v3, { deviceFamily: "Browser" })).ok).toBe(true);
    // the version follows from what the client sent: a v2 signature with a device family is not accepted
    const mixed = await signed(v2, { deviceFamily: "Browser" });
    expect(mixed.error?.message).toMatch(/v3 device payload \(v3 because client\.deviceFamily was sent\)/);
    expect((await signed(v3, {})).error?.message).toMatch(/v2 device payload/);
    // a client with no device family that signs v3 anyway signs it with an empty one: accepted as well as v2
    const v3NoFamily = (nonce: string, at: number) =>
      `v3|${device.id}|openclaw-control-ui|webchat|operator|operator.admin|${at}|tok|${nonce}|web|`;
    const emptyFamily = await signed(v3NoFamily, {});
    console.log(
      `[device] v3 with an empty device family, no client.deviceFamily: ${JSON.stringify(emptyFamily.error ?? "hello-ok")}`,
    );
    expect(emptyFamily.ok, "device-v3-empty-family-accepted").toBe(true);
    expect((await signed(v3NoFamily, { deviceFamily: "" })).ok).toBe(true);
  });

  it("takes auth.password as the shared secret (Loopgate has no password mode)", async () => {
    const { url } = await gateway({ gateway: { token: "tok" } });
    const byPassword = await RawPeer.open(url);
    const challenge = await byPassword.seen((f) => f.event === "connect.challenge");
    expect(challenge).toBeDefined();
    const client = { id: "openclaw-control-ui", version: "1", platform: "web", mode: "webchat" };
    const ok = await byPassword.call("connect", { minProtocol: 4, maxProtocol: 4, client, auth: { password: "tok" } });
    expect(ok.ok).toBe(true);
    byPassword.close();
    const wrong = await RawPeer.open(url);
    await wrong.seen((f) => f.event === "connect.challenge");
    const res = await wrong.call("connect", { minProtocol: 4, maxProtocol: 4, client, auth: { password: "nope" } });
    expect(res.error).toMatchObject({ code: "unauthorized" });
  });

  it("refuses a bad device signature, a foreign nonce, and an id that is not the key's hash", async () => {
    const { url } = await gateway();
    const device = createDeviceIdentity();
    const other = createDeviceIdentity();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ signature: other.sign("v3|whatever") }, /params\.device\.signature/],
      [{ nonce: "not-the-challenge" }, /params\.device\.nonce/],
      [{ id: other.id }, /params\.device\.id/],
      [{ publicKey: "short" }, /params\.device\.publicKey/],
    ];
    for (const [override, message] of cases) {
      const peer = await RawPeer.open(url);
      const res = await peer.connect({ device, deviceOverride: override });
      expect(res.ok, JSON.stringify(override)).toBe(false);
      expect(res.error?.code).toBe("unauthorized");
      expect(res.error?.message).toMatch(message);
      expect((await peer.closed).code).toBe(1008);
    }
    // a device signed for different scopes than the ones sent does not verify either
    const peer = await RawPeer.open(url);
    const challenge = await peer.seen((f) => f.event === "connect.challenge");
    const signedAt = Date.now();
    const nonce = String(challenge.payload?.nonce);
    const signature = device.sign(`v3|${device.id}|test|test|operator|operator.admin|${signedAt}||${nonce}|linux|`);
    const res = await peer.call("connect", {
      minProtocol: 4,
      maxProtocol: 4,
      client: { id: "test", version: "1", platform: "linux", mode: "test" },
      role: "operator",
      scopes: ["operator.read"],
      device: { id: device.id, publicKey: device.publicKey, signature, signedAt, nonce },
    });
    expect(res.error?.message).toMatch(/params\.device\.signature/);
  });

  it("closes a socket that never sends connect", async () => {
    const { url, gw } = await gateway({ gateway: { handshakeTimeoutMs: 30 } });
    const idle = await RawPeer.open(url);
    expect(await idle.closed).toMatchObject({ code: 1008, reason: "connect timeout" });
    expect(gw.connectionCount).toBe(0);
  });

  it("caps frames before connect at 64 KiB", async () => {
    const { url } = await gateway();
    const peer = await RawPeer.open(url);
    await peer.seen((f) => f.event === "connect.challenge");
    peer.sendRaw(JSON.stringify({ type: "req", id: "big", method: "connect", params: { pad: "x".repeat(70 * 1024) } }));
    // refused from the frame's header, before it is read: there is no request to answer, only the close code
    expect((await peer.closed).code).toBe(1009);
    expect(peer.frames.filter((f) => f.type === "res")).toEqual([]);
  });

  it("drops frames above maxPayload after connect", async () => {
    const { url } = await gateway({ gateway: { maxPayload: 256 * 1024 } });
    const peer = await connectedPeer(url);
    peer.sendRaw(
      JSON.stringify({ type: "req", id: "huge", method: "health", params: { pad: "x".repeat(300 * 1024) } }),
    );
    expect((await peer.closed).code).toBe(1009);
  });

  it("answers bad frames after connect with an error naming the field, and stays usable", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);

    peer.sendRaw("[1,2");
    const malformed = await peer.next((f) => f.type === "res", "malformed-JSON answer");
    expect(malformed).toMatchObject({ ok: false, id: "unknown", error: { code: "invalid_request" } });

    peer.sendRaw(JSON.stringify({ type: "req", method: "health" }));
    const noId = await peer.next((f) => f.type === "res", "missing-id answer");
    expect(noId.error).toMatchObject({ code: "invalid_request", message: "frame.id: required" });

    const unknown = await peer.call("agents.frobnicate", {});
    expect(unknown.error).toMatchObject({
      code: "unknown_method",
      message: expect.stringContaining("agents.frobnicate"),
    });

    const missing = await peer.call("agent", { message: "hi" });
    expect(missing.error).toMatchObject({ code: "invalid_params", message: "params.idempotencyKey: required" });

    const wrongType = await peer.call("agent.wait", { runId: "x", timeoutMs: "soon" });
    expect(wrongType.error?.message).toBe("params.timeoutMs: expected number, got string");

    const typo = await peer.call("agent", { message: "hi", idempotencyKey: "k1", sesionKey: "x" });
    expect(typo.error?.message).toBe("params.sesionKey: unknown field");

    const badKey = await peer.call("agent", { message: "hi", idempotencyKey: "k2", sessionKey: "agent::x" });
    expect(badKey.error).toMatchObject({
      code: "invalid_params",
      message: expect.stringMatching(/^params\.sessionKey: /),
    });

    const again = await peer.call("connect", {});
    expect(again.error?.message).toMatch(/already connected/);

    expect((await peer.call("health")).payload).toMatchObject({ ok: true });
    peer.close();
  });

  it("accepts and ignores the other AgentParams fields OpenClaw clients send", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    const id = peer.send("agent", {
      message: "hello",
      idempotencyKey: "with-extras",
      channel: "webchat",
      to: "+15550100",
      attachments: [],
      bestEffortDeliver: true,
      deliver: false,
    });
    const accepted = await peer.response(id, 1);
    expect(accepted.payload).toMatchObject({ runId: "with-extras", status: "accepted" });
    const final = await peer.response(id, 2);
    expect(final.payload).toMatchObject({ status: "ok" });
    peer.close();
  });

  it("numbers every event frame of a connection 1, 2, 3, ... including ticks", async () => {
    const { url } = await gateway({ gateway: { tickIntervalMs: 20 } });
    const peer = await connectedPeer(url);
    await peer.seen((f) => f.event === "tick" && (f.seq ?? 0) >= 4, "a few ticks");
    const seqs = peer.all((f) => f.type === "event").map((f) => f.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const tick = peer.all((f) => f.event === "tick")[0];
    expect(Object.keys(tick.payload ?? {})).toEqual(["ts"]);
    peer.close();
  });

  it("serves GET /health as JSON on the WebSocket port", async () => {
    const { gw } = await gateway();
    const res = await httpGet(`http://127.0.0.1:${gw.port}/health`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ ok: true, version: expect.any(String), activeRuns: 0, sessions: 0 });
    expect((await httpGet(`http://127.0.0.1:${gw.port}/nope`)).status).toBe(404);
  });

  it("browser origins: loopback and gateway.allowedOrigins connect, any other is refused naming the setting", async () => {
    const { url } = await gateway({ config: { gateway: { allowedOrigins: ["https://console.example"] } } });
    const originOf = (origin: string) => new RawPeer(url, { headers: { origin } });
    // a site the user happens to visit: the socket opens, connect is refused with the setting to change
    const foreign = originOf("https://evil.example");
    const refused = await foreign.connect();
    expect(refused.error).toMatchObject({ code: "forbidden" });
    expect(refused.error?.message).toMatch(/"https:\/\/evil\.example" is not allowed.*gateway\.allowedOrigins/);
    await foreign.closed;
    // a listed origin connects (on a gateway without a token, only a listed one or the gateway's own page does:
    // gateway-browser-access.test.ts)
    const listed = originOf("https://console.example");
    expect((await listed.connect()).ok).toBe(true);
    listed.close();
    // a token does not open the gateway to every site either; loopback pages sign in with it
    const withToken = await gateway({ gateway: { token: "tok" } });
    const tokenForeign = new RawPeer(withToken.url, { headers: { origin: "https://evil.example" } });
    expect((await tokenForeign.connect({ token: "tok" })).error?.message).toMatch(/gateway\.allowedOrigins/);
    for (const loopback of ["http://localhost:5173", "http://127.0.0.1:8080"]) {
      const peer = new RawPeer(withToken.url, { headers: { origin: loopback } });
      expect((await peer.connect({ token: "tok" })).ok, loopback).toBe(true);
      peer.close();
    }
  });

  it("refuses to start on a non-loopback host without a token", async () => {
    await expect(startTestGateway({ gateway: { host: "0.0.0.0" } })).rejects.toThrow(/without authentication/);
  });

  it("client: connects with token and device, and surfaces a refusal as GatewayRequestError", async () => {
    const { url } = await gateway({ gateway: { token: "tok" } });
    const client = await GatewayClient.connect({
      url,
      token: "tok",
      device: createDeviceIdentity(),
      client: { id: "test", mode: "test" },
    });
    expect(client.hello.protocol).toBe(4);
    expect(await client.request("health")).toMatchObject({ ok: true });
    await expect(client.request("sessions.get", { sessionKey: "nope" })).rejects.toMatchObject({
      name: "GatewayRequestError",
      code: "not_found",
    });
    await client.close();
    const refused = GatewayClient.connect({ url, token: "nope", client: { id: "test", mode: "test" } });
    await expect(refused).rejects.toBeInstanceOf(GatewayRequestError);
    await expect(refused).rejects.toMatchObject({ code: "unauthorized" });
  });
});
