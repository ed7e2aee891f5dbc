/*
 * Issue 25 item 1: what a browser page can reach. A page whose DNS name was rebound to 127.0.0.1 sends its own name
 * in `Host` and `Origin`; a tokenless loopback gateway must not answer it at all, over WebSocket or HTTP. The
 * gateway's own page and listed origins keep working. Real sockets on an ephemeral loopback port; the rebinding is
 * simulated by the headers a browser would send (the TCP connection goes to 127.0.0.1 as the rebound name would).
 */
import http from "node:http";
import { describe, expect, it } from "vitest";
import { RawPeer, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

function get(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
        let body = "";
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on("error", reject);
  });
}

/** Opens a WebSocket with these headers; says what became of it: refused (status), or what `connect` answered. */
async function tryConnect(url: string, headers: Record<string, string>, token?: string): Promise<string> {
  const peer = new RawPeer(url, { headers });
  // with this listener ws leaves the failed upgrade to us (no "error" follows): its status is the answer
  const refused = new Promise<number | undefined>((resolve) =>
    peer.ws.once("unexpected-response", (_req, res) => {
      res.resume();
      peer.ws.terminate();
      resolve(res.statusCode);
    }),
  );
  const opened = peer.opened.then(
    () => undefined,
    () => -1,
  );
  const status = await Promise.race([opened, refused]);
  if (status !== undefined) return `refused: HTTP ${status}`;
  const hello = await peer.connect(token === undefined ? {} : { token });
  peer.close();
  if (hello.ok) return `hello-ok: ${JSON.stringify((hello.payload as { auth?: unknown }).auth)}`;
  return `connect refused: ${hello.error?.code}: ${hello.error?.message}`;
}

describe("browser access: Host and Origin", () => {
  it("dns-rebinding-host-gets-no-grant: a WebSocket with Host and Origin evil.example:<port> is refused before connect", async () => {
    const { gw, url } = await gateway();
    const rebound = `evil.example:${gw.port}`;
    const outcome = await tryConnect(url, { host: rebound, origin: `http://${rebound}` });
    console.log(`[rebinding] ws to 127.0.0.1:${gw.port} with Host/Origin ${rebound}: ${outcome}`);
    expect(outcome).toBe("refused: HTTP 421");
  });

  it("dns-rebinding-http-refused: /health and the console answer a foreign Host with 421 and say why", async () => {
    const { gw } = await gateway();
    for (const path of ["/health", "/", "/assets/nothing.js"]) {
      const res = await get(gw.port, path, `evil.example:${gw.port}`);
      console.log(`[rebinding] GET ${path} Host evil.example:${gw.port}: ${res.status} ${res.body}`);
      expect(res.status, path).toBe(421);
      expect(JSON.parse(res.body).error).toMatch(/host "evil\.example:\d+" is not allowed: .*gateway\.allowedOrigins/);
    }
    // the gateway's own names are served
    for (const host of [`127.0.0.1:${gw.port}`, `localhost:${gw.port}`, `[::1]:${gw.port}`]) {
      expect((await get(gw.port, "/health", host)).status, host).toBe(200);
    }
  });

  it("the gateway's own page connects without a token, at 127.0.0.1:<port> and localhost:<port>", async () => {
    const { gw, url } = await gateway();
    for (const host of [`127.0.0.1:${gw.port}`, `localhost:${gw.port}`]) {
      const outcome = await tryConnect(url, { host, origin: `http://${host}` });
      expect(outcome, host).toMatch(/^hello-ok: .*operator\.admin/);
    }
  });

  it("browser-origin-gets-no-tokenless-grant: another loopback page must present the token, a listed origin need not", async () => {
    const { gw, url } = await gateway();
    const host = `127.0.0.1:${gw.port}`;
    // another local web server's page (a dev server, a page someone got onto it)
    const other = await tryConnect(url, { host, origin: "http://localhost:5173" });
    expect(other).toMatch(/^connect refused: forbidden: .*without a token.*gateway\.allowedOrigins/);
    // listing it is the operator saying it may
    const listed = await gateway({ config: { gateway: { allowedOrigins: ["http://localhost:5173"] } } });
    expect(await tryConnect(listed.url, { host, origin: "http://localhost:5173" })).toMatch(/^hello-ok/);
    // with a token configured, a loopback page that signs in with it connects
    const withToken = await gateway({ gateway: { token: "tok" } });
    expect(await tryConnect(withToken.url, { host, origin: "http://localhost:5173" }, "tok")).toMatch(/^hello-ok/);
    expect(await tryConnect(withToken.url, { host, origin: "http://localhost:5173" })).toMatch(
      /^connect refused: unauthorized/,
    );
  });

  it("a host listed in gateway.allowedOrigins is served (a reverse proxy that keeps the page's Host)", async () => {
    const { gw, url } = await gateway({ config: { gateway: { allowedOrigins: ["https://console.example"] } } });
    expect((await get(gw.port, "/health", "console.example")).status).toBe(200);
    const outcome = await tryConnect(url, { host: "console.example", origin: "https://console.example" });
    expect(outcome).toMatch(/^hello-ok/);
    // the list is of origins: another host is still refused
    expect((await get(gw.port, "/health", "other.example")).status).toBe(421);
  });

  it("the process keeps serving after refusals, and a client without Origin (the CLI) connects as before", async () => {
    const { gw, url } = await gateway();
    for (let i = 0; i < 20; i++) await get(gw.port, "/health", `evil.example:${gw.port}`);
    expect(await tryConnect(url, {})).toMatch(/^hello-ok: .*operator\.admin/);
  });
});
