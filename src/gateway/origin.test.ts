import { describe, expect, it } from "vitest";
import { BrowserAccess } from "./origin.js";

describe("which hosts and browser origins the gateway answers", () => {
  const access = new BrowserAccess({
    bindHost: "127.0.0.1",
    port: () => 18789,
    allowedOrigins: ["https://Console.Example:443"],
  });

  it("Host: no header, loopback names and IPs, the bind address and listed hosts pass; any other name is refused", () => {
    for (const host of [
      undefined,
      "127.0.0.1:18789",
      "localhost",
      "LOCALHOST:1",
      "[::1]:18789",
      "127.0.0.2",
      "console.example",
    ]) {
      expect(access.hostRefusal(host), String(host)).toBeUndefined();
    }
    for (const host of [
      "evil.example:18789",
      "localhost.evil.example",
      "evil@127.0.0.1",
      "127.0.0.1/x",
      "",
      "console.example.evil",
    ]) {
      expect(access.hostRefusal(host), host).toMatch(/is not allowed: .*gateway\.allowedOrigins/);
    }
  });

  it("Origin: the gateway's own page and listed origins pass without a token; other loopback pages need one", () => {
    for (const origin of [undefined, "http://127.0.0.1:18789", "http://localhost:18789", "https://console.example"]) {
      expect(access.originRefusal(origin, false), String(origin)).toBeUndefined();
    }
    for (const origin of [
      "http://localhost:5173",
      "http://[::1]:3000",
      "http://127.0.0.2",
      "https://127.0.0.1:18789",
    ]) {
      expect(access.originRefusal(origin, false), origin).toMatch(/without a token.*gateway\.allowedOrigins/);
      expect(access.originRefusal(origin, true), origin).toBeUndefined();
    }
  });

  it("Origin: any other origin is refused, token or not, with the setting that would allow it", () => {
    for (const origin of ["https://evil.example", "http://evil.example:18789", "null", "not a url"]) {
      expect(access.originRefusal(origin, true), origin).toMatch(/is not allowed: .*gateway\.allowedOrigins/);
      expect(access.originRefusal(origin, false), origin).toMatch(/is not allowed/);
    }
  });

  it("bound to all interfaces, the machine's own addresses are its names", () => {
    const lan = new BrowserAccess({ bindHost: "0.0.0.0", port: () => 18789, allowedOrigins: [] });
    expect(lan.hostRefusal("127.0.0.1:18789")).toBeUndefined();
    expect(lan.hostRefusal("10.255.255.254:18789")).toMatch(/not allowed/);
    expect(lan.hostRefusal("gw.lan:18789")).toMatch(/not allowed/);
  });
});
