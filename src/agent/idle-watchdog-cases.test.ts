import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkConfig } from "../config/check.js";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { sqliteRuntime } from "../node/compose.js";
import { isPrivateNetworkBaseUrl } from "../providers/loopback.js";
import type { ModelProvider, ModelRequest, ModelStreamEvent } from "../providers/types.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { ManualClock } from "../testing/manual-clock.js";
import { CRON_CLOUD_IDLE_CAP_MS, resolveIdleTimeoutMs } from "./idle-watchdog.js";
import { providerFor } from "./run/attempt.js";

/*
 * SPEC 13's model-idle special cases: a cron run with an explicit timeout caps a cloud model's silence at 60 s, a
 * self-hosted endpoint on a network hostname gets 300 s (by config or by address), and an endpoint on this machine
 * or a private network may turn the watchdog off (`timeoutSeconds: 0`; loopback and private-network baseUrls only).
 */

const HOUR = 3_600_000;

describe("model idle window: the cron and self-hosted cases", () => {
  it("a cron run with an explicit timeout caps a cloud model's silence at 60 s", () => {
    expect(CRON_CLOUD_IDLE_CAP_MS).toBe(60_000);
    expect(resolveIdleTimeoutMs({ selfHosted: false, runTimeoutMs: HOUR, cronTimeout: true })).toBe(60_000);
    // even when the provider asks for longer: the fallback must still have time
    expect(
      resolveIdleTimeoutMs({ selfHosted: false, providerTimeoutMs: 600_000, runTimeoutMs: HOUR, cronTimeout: true }),
    ).toBe(60_000);
    // a shorter run timeout still wins
    expect(resolveIdleTimeoutMs({ selfHosted: false, runTimeoutMs: 30_000, cronTimeout: true })).toBe(30_000);
    // not a cron run: the cloud 120 s
    expect(resolveIdleTimeoutMs({ selfHosted: false, runTimeoutMs: HOUR })).toBe(120_000);
  });

  it("self-hosted models keep 300 s in a cron run: they are slow to start, not stuck", () => {
    expect(resolveIdleTimeoutMs({ selfHosted: true, runTimeoutMs: HOUR, cronTimeout: true })).toBe(300_000);
  });

  it("a private-network endpoint with timeoutSeconds 0 runs without the idle watchdog; elsewhere 0 is not special", () => {
    const lan = { selfHosted: true, privateNetwork: true, runTimeoutMs: HOUR };
    expect(resolveIdleTimeoutMs({ ...lan, providerTimeoutMs: 0 })).toBe(0);
    expect(resolveIdleTimeoutMs(lan)).toBe(300_000);
    // a network endpoint cannot turn it off (config/check.ts refuses the 0 too)
    expect(resolveIdleTimeoutMs({ selfHosted: true, providerTimeoutMs: 0, runTimeoutMs: HOUR })).toBe(300_000);
  });
});

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A model that never sends a chunk; it stops when its signal fires, as an SDK does. */
const silent: ModelProvider = {
  id: "silent",
  api: "openai-completions",
  async *stream(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    await new Promise((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason)));
    yield { type: "text_delta", delta: "never" };
  },
};

function runtimeWith(providers: Record<string, unknown>) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-idle-"));
  dirs.push(dir);
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  stores.push(store);
  const clock = new ManualClock(0);
  const config = parseConfig({ models: { providers } });
  const rt = sqliteRuntime({
    config,
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    clock,
    logger: silentLogger,
    providers: {},
  });
  return { rt, clock };
}

/**
 * How long the run's provider lets the silent model be silent: advances the clock until the watchdog fires, or
 * answers "off" after 400 s (beyond the longest window) without it.
 */
async function idleWindowSeconds(
  h: ReturnType<typeof runtimeWith>,
  ref: string,
  spec?: { lane?: string; timeout?: number },
): Promise<number | "off"> {
  const model = h.rt.resolveModel(ref);
  h.rt.getProvider = async () => silent;
  const provider = await providerFor(h.rt, model, HOUR, spec);
  const controller = new AbortController();
  const ended = provider
    .stream({ model: model.modelId, messages: [], tools: [], signal: controller.signal })
    [Symbol.asyncIterator]()
    .next()
    .then(
      () => "answered",
      (err: Error) => err.message,
    );
  const start = h.clock.now();
  for (let s = 1; s <= 400; s++) {
    h.clock.advance(1000);
    const outcome = await Promise.race([ended, new Promise((r) => setImmediate(() => r(undefined)))]);
    if (typeof outcome === "string") {
      expect(outcome).toMatch(/idle timeout/);
      return (h.clock.now() - start) / 1000;
    }
  }
  // 400 s of silence and no watchdog (the longest window is 300 s): it is off
  controller.abort();
  await ended;
  return "off";
}

describe("which window a run's model gets", () => {
  it("models.providers.<id>.selfHosted: a network hostname gets 300 s by config, and a private address without it", async () => {
    const h = runtimeWith({
      gpu: { api: "openai-completions", baseUrl: "https://gpu-box.example.net/v1", selfHosted: true },
      cloud: { api: "openai-completions", baseUrl: "https://api.example.com/v1" },
      lan: { api: "openai-completions", baseUrl: "http://192.168.1.20:8000/v1" },
      notself: { api: "openai-completions", baseUrl: "http://10.0.0.5/v1", selfHosted: false },
    });
    expect(await idleWindowSeconds(h, "gpu/m")).toBe(300);
    expect(await idleWindowSeconds(h, "cloud/m")).toBe(120);
    expect(await idleWindowSeconds(h, "lan/m")).toBe(300);
    expect(await idleWindowSeconds(h, "notself/m")).toBe(120);
  });

  it("a cron-lane run with a timeout gives a cloud model 60 s, a self-hosted one 300 s", async () => {
    const h = runtimeWith({
      cloud: { api: "openai-completions", baseUrl: "https://api.example.com/v1" },
      gpu: { api: "openai-completions", baseUrl: "https://gpu-box.example.net/v1", selfHosted: true },
    });
    const cron = { lane: "cron", timeout: 900 };
    expect(await idleWindowSeconds(h, "cloud/m", cron)).toBe(60);
    expect(await idleWindowSeconds(h, "gpu/m", cron)).toBe(300);
    // the cron lane without an explicit timeout is not the special case
    expect(await idleWindowSeconds(h, "cloud/m", { lane: "cron" })).toBe(120);
  });

  it("timeoutSeconds 0 on a loopback baseUrl turns the watchdog off, and is refused for a public endpoint", async () => {
    const h = runtimeWith({
      ollama: { api: "openai-completions", baseUrl: "http://127.0.0.1:11434/v1", timeoutSeconds: 0 },
    });
    expect(await idleWindowSeconds(h, "ollama/m", { lane: "cron", timeout: 900 })).toBe("off");
    const cloud = { api: "openai-completions", baseUrl: "https://api.example.com/v1", timeoutSeconds: 0 };
    const problems = checkConfig(parseConfig({ models: { providers: { cloud } } }), {});
    expect(problems).toContain(
      "models.providers.cloud.timeoutSeconds: 0 turns the model idle watchdog off, which only an endpoint on this machine or a private network may do (a loopback, 10/8, 172.16/12, 192.168/16, fc00::/7 or .local baseUrl such as http://127.0.0.1:11434/v1)",
    );
    const local = { ...cloud, baseUrl: "http://localhost:11434/v1" };
    expect(checkConfig(parseConfig({ models: { providers: { local } } }), {})).toEqual([]);
  });

  it("private-network-endpoint-may-turn-watchdog-off", async () => {
    const cases: Array<[string, boolean]> = [
      ["http://127.0.0.1:11434/v1", true],
      ["http://[::1]:8000/v1", true],
      ["http://10.1.2.3:8000/v1", true],
      ["http://172.16.0.9/v1", true],
      ["http://172.31.255.1/v1", true],
      ["http://172.32.0.1/v1", false],
      ["http://192.168.1.20:8000/v1", true],
      ["http://[fd12:3456::1]:8000/v1", true],
      ["http://[fc00::5]/v1", true],
      ["http://[fe80::1]/v1", false],
      ["http://gpu-box.local:8000/v1", true],
      ["https://api.example.com/v1", false],
      ["http://8.8.8.8/v1", false],
    ];
    const seen = cases.map(([url]) => [url, isPrivateNetworkBaseUrl(url)] as const);
    console.log(`private network? ${seen.map(([u, p]) => `${u}=${p}`).join(" ")}`);
    expect(seen).toEqual(cases);
    // one run config: a LAN GPU box with timeoutSeconds 0 loads and its runs have no idle watchdog
    const providers = {
      lan: { api: "openai-completions", baseUrl: "http://192.168.1.20:8000/v1", timeoutSeconds: 0 },
      ula: { api: "openai-completions", baseUrl: "http://[fd00::20]:8000/v1", timeoutSeconds: 0 },
    };
    expect(checkConfig(parseConfig({ models: { providers } }), {})).toEqual([]);
    const h = runtimeWith(providers);
    expect(await idleWindowSeconds(h, "lan/m")).toBe("off");
    expect(await idleWindowSeconds(h, "ula/m")).toBe("off");
  });
});
