import { describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { keepRedactedSecrets, redactConfig } from "./redact-config.js";

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

describe("a config written back after config.get (config.patch, config.apply)", () => {
  const file = {
    gateway: { auth: { tokens: [{ token: "tenant-secret", scopes: ["operator.read"], sessions: ["a-*"] }] } },
    storage: { backend: "postgres", postgres: { url: "postgres://app:pg-secret@db.internal:5432/lg" } },
    mcp: { servers: { s: { url: "https://mcp.example/", headers: { authorization: "Bearer mcp-secret" } } } },
  };

  it("what config.get showed for a secret (the marker, a URL with its credentials hidden, a whole headers object) keeps the current value", () => {
    const shown = redactConfig(file).config;
    const { value, problems } = keepRedactedSecrets(shown, file);
    expect(problems).toEqual([]);
    expect(value).toEqual(file);
  });

  it("a new value is the client's; a marker with nothing behind it is left out; one that matches nothing is refused by path", () => {
    const { value, problems } = keepRedactedSecrets(
      {
        gateway: { auth: { tokens: [{ token: "new-secret", scopes: ["operator.read"], sessions: ["a-*"] }] } },
        models: { providers: { p: { apiKey: "[redacted]" } } },
        storage: { postgres: { url: "postgres://[redacted]@other-host:5432/lg" } },
      },
      file,
    );
    expect(value).toEqual({
      gateway: { auth: { tokens: [{ token: "new-secret", scopes: ["operator.read"], sessions: ["a-*"] }] } },
      models: { providers: { p: {} } },
      storage: { postgres: {} },
    });
    expect(problems).toEqual([expect.stringMatching(/^storage\.postgres\.url: holds "\[redacted\]"/)]);
  });
});
