/*
 * The web console's files as the gateway serves them (SPEC 19), over real HTTP: index.html at `/`, hashed assets
 * cached for good, the right content types, and nothing outside the console folder, whatever the request path says.
 * The folder here is a temp copy with a secret file beside it, so a traversal that worked would show.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { connectedPeer, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-console-http-")));
const consoleDir = path.join(root, "console");
fs.mkdirSync(path.join(consoleDir, "assets"), { recursive: true });
fs.writeFileSync(path.join(consoleDir, "index.html"), "<!doctype html><title>console</title>");
fs.writeFileSync(path.join(consoleDir, "assets", "index-AbC123.js"), "console.log('app')");
fs.writeFileSync(path.join(consoleDir, "assets", "index-AbC123.css"), "body{}");
fs.writeFileSync(path.join(consoleDir, ".env"), "SECRET=inside-dotfile");
fs.writeFileSync(path.join(root, "secret.txt"), "SECRET=outside");
fs.symlinkSync(path.join(root, "secret.txt"), path.join(consoleDir, "assets", "link.txt"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A raw request: the path goes on the wire exactly as given (fetch would normalize `..` away first). */
function get(
  port: number,
  rawPath: string,
  method = "GET",
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path: rawPath }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the gateway serves the web console", () => {
  it("answers / with the console page, and its hashed assets with long-lived caching", async () => {
    const { gw } = await gateway({ gateway: { consoleDir } });
    const page = await get(gw.port, "/");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["cache-control"]).toBe("no-cache");
    expect(page.headers["content-security-policy"]).toContain("default-src 'self'");
    expect(page.body).toContain("<title>console</title>");
    const js = await get(gw.port, "/assets/index-AbC123.js");
    expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(js.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(js.body).toBe("console.log('app')");
    const css = await get(gw.port, "/assets/index-AbC123.css?v=1");
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
    const head = await get(gw.port, "/index.html", "HEAD");
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    // /health keeps answering, and the WebSocket still works on the same port
    expect((await get(gw.port, "/health")).status).toBe(200);
    const peer = await connectedPeer(gw.url);
    expect((await peer.call("health")).ok).toBe(true);
  });

  it("never serves a file outside the console folder, whatever the path", async () => {
    const { gw } = await gateway({ gateway: { consoleDir } });
    const hostile = [
      "/../secret.txt",
      "/assets/../../secret.txt",
      "/%2e%2e/secret.txt",
      "/%2E%2E%2Fsecret.txt",
      "/assets%2f..%2f..%2fsecret.txt",
      "/..%5csecret.txt",
      "/assets/..\\..\\secret.txt",
      "/%252e%252e/secret.txt",
      "//etc/passwd",
      "/%00index.html",
      "/index.html%00.js",
      "/.env",
      "/assets/link.txt",
      "/assets/",
      "/assets",
      "/%",
      `/${"a/".repeat(200)}x.js`,
    ];
    for (const p of hostile) {
      const res = await get(gw.port, p);
      expect(res.status, p).toBe(404);
      expect(res.body, p).not.toContain("SECRET");
      expect(res.headers["content-type"], p).toBe("application/json; charset=utf-8");
    }
    // a write method never reaches the files
    expect((await get(gw.port, "/index.html", "POST")).status).toBe(404);
  });

  it("answers / with the JSON banner when no console was built", async () => {
    const { gw } = await gateway({ gateway: { consoleDir: path.join(root, "missing") } });
    const res = await get(gw.port, "/");
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ name: "loopgate", websocket: true, health: "/health" });
  });
});
