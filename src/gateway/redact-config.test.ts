import { describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { redactConfig } from "./redact-config.js";

describe("config.get's view of the config", () => {
  it("no key, token, token hash, header or URL credential leaves; the rest is as configured", () => {
    const config = parseConfig({
      gateway: {
        auth: {
          token: "root-secret",
          tokens: [
            {
              tokenHash: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
              scopes: ["operator.read"],
              sessions: ["*"],
            },
          ],
        },
      },
      models: {
        providers: {
          p: {
            api: "openai-completions",
            baseUrl: "https://user:pass@models.example/v1",
            apiKey: "sk-live",
            headers: { "x-api-key": "hdr" },
            models: [{ id: "m", maxTokens: 1000 }],
          },
        },
      },
    });
    const { config: shown, redacted } = redactConfig(config);
    const text = JSON.stringify(shown);
    for (const secret of [
      "root-secret",
      "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
      "sk-live",
      "hdr",
      "user:pass",
    ])
      expect(text).not.toContain(secret);
    expect(redacted.sort()).toEqual(
      [
        "gateway.auth.token",
        "gateway.auth.tokens[0].tokenHash",
        "models.providers.p.apiKey",
        "models.providers.p.baseUrl",
        "models.providers.p.headers",
      ].sort(),
    );
    // not secrets, though their names look alike
    expect(shown).toMatchObject({ models: { providers: { p: { models: [{ id: "m", maxTokens: 1000 }] } } } });
  });
});
