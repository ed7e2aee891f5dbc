import { describe, expect, it } from "vitest";
import { configKeyHelp } from "./key-help.js";
import { configSchema } from "./schema.js";

describe("config key help (the console's config page)", () => {
  const help = configKeyHelp(configSchema);

  it("names each described key by the path config.get's values have, through defaults, records and arrays", () => {
    expect(help["gateway.port"]).toMatch(/port the gateway listens on/);
    expect(help["cron.runLog.keepLines"]).toMatch(/run records kept per job/);
    expect(help["plugins.entries.*.enabled"]).toMatch(/not loaded/);
    expect(help["tools.exec.allowlist"]).toMatch(/glob patterns/);
    expect(help["gateway.metrics.enabled"]).toMatch(/Prometheus metrics at GET \/metrics/);
    expect(help["gateway.metrics.port"]).toMatch(/port of its own/);
    expect(help["gateway.metrics.bind"]).toMatch(/needs gateway.metrics.port/);
  });

  it("leaves keys without a description out instead of inventing text", () => {
    expect(help["gateway.preAuth"]).toBeUndefined();
    for (const text of Object.values(help)) expect(text.length).toBeGreaterThan(10);
  });
});
