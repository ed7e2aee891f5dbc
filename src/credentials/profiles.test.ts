import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../config/load.js";
import { resolveAuthProfiles } from "./profiles.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function configDir(config: unknown, files: Record<string, string> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-auth-"));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  const file = path.join(dir, "loopgate.json5");
  fs.writeFileSync(file, JSON.stringify(config));
  return { file, env: { LOOPGATE_STATE_DIR: dir } as NodeJS.ProcessEnv };
}

const providers = {
  openai: { api: "openai-completions", baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-plain-default", models: [] },
  anthropic: { api: "anthropic-messages", baseUrl: "http://127.0.0.1:9/v1", models: [] },
};

function problems(config: unknown, env: NodeJS.ProcessEnv = {}, files: Record<string, string> = {}): string[] {
  const c = configDir(config, files);
  try {
    loadConfig({ configPath: c.file, env: { ...c.env, ...env } });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("auth profiles from config", () => {
  it("auth.profiles with key and keyRef (env, file), and a provider's apiKey as <provider>:default", () => {
    const c = configDir(
      {
        models: { providers },
        auth: {
          profiles: {
            // biome-ignore lint/suspicious/noTemplateCurlyInString: a config env reference
            "openai:work": { provider: "openai", key: "${LG_WORK_KEY}" },
            "openai:env": { provider: "openai", keyRef: { source: "env", id: "LG_ENV_KEY" } },
            "anthropic:file": { provider: "anthropic", mode: "token", keyRef: { source: "file", path: "key.txt" } },
          },
        },
      },
      { "key.txt": "sk-ant-from-file\n" },
    );
    const env = { ...c.env, LG_WORK_KEY: "sk-work", LG_ENV_KEY: "sk-env" };
    const { config } = loadConfig({ configPath: c.file, env });
    const profiles = resolveAuthProfiles(config, env);
    expect(profiles.map((p) => [p.id, p.provider, p.mode, p.implicit, p.key()])).toEqual([
      ["openai:default", "openai", "api_key", true, "sk-plain-default"],
      ["openai:work", "openai", "api_key", false, "sk-work"],
      ["openai:env", "openai", "api_key", false, "sk-env"],
      ["anthropic:file", "anthropic", "token", false, "sk-ant-from-file"],
    ]);
    // the key is read through a function: a profile spread into a log line or an event carries no key
    expect(JSON.stringify(profiles)).not.toMatch(/sk-/);
  });

  it("load-time errors name the key path: unknown provider, missing env, unreadable file, duplicate id, an order naming no profile", () => {
    const found = problems({
      models: { providers },
      auth: {
        profiles: {
          "mystery:x": { provider: "mystery", key: "k" },
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a config env reference
          "openai:nokey": { provider: "openai", key: "${LG_UNSET_KEY}" },
          "openai:noenv": { provider: "openai", keyRef: { source: "env", id: "LG_UNSET_TOO" } },
          "anthropic:nofile": { provider: "anthropic", keyRef: { source: "file", path: "missing.txt" } },
          "openai:default": { provider: "openai", key: "k2" },
          "anthropic:wrong": { provider: "openai", key: "k3" },
          "openai:both": { provider: "openai", key: "k", keyRef: { source: "env", id: "X" } },
        },
        order: { openai: ["openai:default", "openai:ghost", "anthropic:nofile"], nowhere: [] },
      },
      agents: { list: [{ id: "main", auth: { order: { anthropic: ["anthropic:ghost"] } } }] },
    });
    expect(found).toEqual(
      expect.arrayContaining([
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the message names the env reference syntax
        'auth.profiles.openai:both: expected exactly one of key ("${ENV}" or a literal) and keyRef ({source: "env", id} or {source: "file", path})',
      ]),
    );
    const after = problems({
      models: { providers },
      auth: {
        profiles: {
          "mystery:x": { provider: "mystery", key: "k" },
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a config env reference
          "openai:nokey": { provider: "openai", key: "${LG_UNSET_KEY}" },
          "openai:noenv": { provider: "openai", keyRef: { source: "env", id: "LG_UNSET_TOO" } },
          "anthropic:nofile": { provider: "anthropic", keyRef: { source: "file", path: "missing.txt" } },
          "openai:default": { provider: "openai", key: "k2" },
          "anthropic:wrong": { provider: "openai", key: "k3" },
        },
        order: { openai: ["openai:default", "openai:ghost", "anthropic:nofile"], nowhere: [] },
      },
      agents: { list: [{ id: "main", auth: { order: { anthropic: ["anthropic:ghost"] } } }] },
    });
    expect(after).toEqual([
      'auth.profiles.mystery:x.provider: unknown provider "mystery" (configured: openai, anthropic)',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the reference as the message quotes it
      "auth.profiles.openai:nokey.key: references ${LG_UNSET_KEY}, which is not set in the environment",
      "auth.profiles.openai:noenv.keyRef.id: the environment variable LG_UNSET_TOO is not set",
      expect.stringMatching(/^auth\.profiles\.anthropic:nofile\.keyRef\.path: cannot read .*missing\.txt \(ENOENT\)$/),
      'auth.profiles.openai:default: duplicate auth profile id "openai:default" (models.providers.openai.apiKey is already that profile)',
      'auth.profiles.anthropic:wrong: the id must start with its provider ("openai:…")',
      'auth.order.openai[1]: unknown auth profile "openai:ghost"',
      'auth.order.openai[2]: "anthropic:nofile" is not a profile of provider "openai"',
      'auth.order.nowhere: unknown provider "nowhere" (configured: openai, anthropic)',
      'agents.list[0].auth.order.anthropic[0]: unknown auth profile "anthropic:ghost"',
    ]);
  });

  it("mode oauth (OpenClaw's OAuth profiles) is refused at load, naming the path", () => {
    const found = problems({
      models: { providers },
      auth: { profiles: { "openai:o": { provider: "openai", mode: "oauth", key: "k" } } },
    });
    expect(found.some((p) => p.startsWith("auth.profiles.openai:o.mode:"))).toBe(true);
  });
});
