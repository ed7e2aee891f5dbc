import { describe, expect, it } from "vitest";
import { originRefusal } from "./origin.js";

describe("which browser origins may connect", () => {
  const opts = { allowedOrigins: ["https://Console.Example:443"], host: "gw.lan:18789" };

  it("no Origin, loopback, the gateway's own address and listed origins are allowed", () => {
    for (const origin of [
      undefined,
      "http://localhost:5173",
      "http://[::1]:3000",
      "http://127.0.0.2",
      "http://gw.lan:18789",
      "https://console.example",
    ]) {
      expect(originRefusal(origin, opts), String(origin)).toBeUndefined();
    }
  });

  it("any other origin is refused with the setting that would allow it", () => {
    for (const origin of ["https://evil.example", "http://gw.lan:8080", "null", "not a url"]) {
      expect(originRefusal(origin, opts)).toMatch(/is not allowed: .*gateway\.allowedOrigins/);
    }
  });
});
