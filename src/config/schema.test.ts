import { describe, expect, it } from "vitest";
import { configSchema } from "./schema.js";

describe("config defaults", () => {
  it("an empty config materializes every documented default", () => {
    const config = configSchema.parse({});
    expect(config.agents.defaults.timeoutSeconds).toBe(172800);
    expect(config.session.writeLock.acquireTimeoutMs).toBe(60000);
    expect(config.messages.queue).toMatchObject({ mode: "steer", debounceMs: 500, cap: 20, drop: "summarize" });
    expect(config.gateway.port).toBe(18789);
    expect(config.gateway.bind).toBe("loopback");
    expect(config.agents.defaults.maxConcurrent).toBeGreaterThanOrEqual(8);
    expect(config.agents.defaults.compaction.reserveTokens).toBe(20000);
    expect(config.diagnostics.stuckSessionWarnMs).toBe(120000);
  });

  it("defaults fill in around what a partial section sets", () => {
    const config = configSchema.parse({
      messages: { queue: { mode: "collect" } },
      agents: { defaults: { timeoutSeconds: 0 } },
    });
    expect(config.messages.queue).toMatchObject({ mode: "collect", debounceMs: 500, cap: 20, drop: "summarize" });
    expect(config.agents.defaults.timeoutSeconds).toBe(0); // 0 = unlimited is allowed
    expect(config.session.writeLock.acquireTimeoutMs).toBe(60000);
  });

  it("a provider's models get their window and output defaults", () => {
    const config = configSchema.parse({
      models: {
        providers: {
          local: { api: "openai-completions", baseUrl: "http://127.0.0.1:11434/v1", models: [{ id: "qwen3" }] },
        },
      },
    });
    expect(config.models.providers.local.models[0]).toEqual({ id: "qwen3", contextWindow: 128000, maxTokens: 8192 });
  });
});
