import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayConnectError } from "../../src/client/errors.js";
import { GatewayClient } from "../../src/client/gateway-client.js";

// A gateway refuses an upgrade with HTTP 421 and a JSON body when the Host is not one of its names (DNS-rebinding
// defence); the client must tell the user why instead of ws's bare "Unexpected server response: 421".
describe("a client refused at the HTTP upgrade", () => {
  let server: http.Server;
  let port = 0;
  beforeAll(async () => {
    server = http.createServer();
    server.on("upgrade", (_req, socket) => {
      const body = JSON.stringify({ ok: false, error: 'Host "gw.lan:1" is not a name of this gateway' });
      socket.end(
        `HTTP/1.1 421 Misdirected Request\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("host-refusal-says-why: the connect error carries the status and the gateway's reason", async () => {
    const err = await GatewayClient.connect({ url: `ws://127.0.0.1:${port}`, connectTimeoutMs: 5000 }).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayConnectError);
    console.log(`refusal: ${(err as Error).message}`);
    expect((err as Error).message).toContain("HTTP 421");
    expect((err as Error).message).toContain('Host "gw.lan:1" is not a name of this gateway');
  });
});
