import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseConfig } from "./load.js";

/*
 * OpenClaw's own example configs (docs/gateway/configuration-reference.md, sections agents, models, gateway, tools,
 * cron and session), typed into test/fixtures/openclaw-config/. Each loads, or loads with ONE "not supported by
 * Loopgate" warning naming the keys it ignores. The exceptions are examples naming OpenClaw's built-in providers
 * (minimax, openrouter, opencode, zai, kimi-coding) without configuring them: Loopgate has no built-in catalog, so
 * their model refs are refused with the load error that names the provider, as any unknown provider is.
 */

const fixtures = path.resolve(import.meta.dirname, "../../test/fixtures/openclaw-config");
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-occonfig-"));
afterAll(() => fs.rmSync(stateDir, { recursive: true, force: true }));

/** What a user migrating from OpenClaw has set: the two providers' keys Loopgate makes providers from, and the key
 * the MiniMax example tells them to set. */
const userEnv = {
  LOOPGATE_STATE_DIR: stateDir,
  OPENAI_API_KEY: "sk-test-openai",
  ANTHROPIC_API_KEY: "sk-test-anthropic",
  MINIMAX_API_KEY: "sk-test-minimax",
};

/** the examples that need a provider OpenClaw builds in and Loopgate does not */
const builtInProviderOnly: Record<string, string> = {
  "agents-defaults-model.json5": "minimax",
  "agents-defaults-compaction.json5": "openrouter",
  "models-opencode.json5": "opencode",
  "models-zai.json5": "zai",
  "models-kimi-coding.json5": "kimi-coding",
};

/** secrets typed in the examples: the warning names keys, never these */
const exampleSecrets = ["your-token", "replace-with-dedicated-token", "brave_api_key", "sk-..."];

type Outcome = { fixture: string; result: "loads" | "warns" | "refused"; text: string };

function loadFixture(file: string): Outcome {
  const warnings: string[] = [];
  try {
    loadConfig({ configPath: path.join(fixtures, file), env: { ...userEnv }, onWarning: (m) => warnings.push(m) });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { fixture: file, result: "refused", text: err.problems.join("; ") };
  }
  expect(warnings.length, `${file}: one warning at most`).toBeLessThanOrEqual(1);
  if (warnings.length === 0) return { fixture: file, result: "loads", text: "loads" };
  return { fixture: file, result: "warns", text: warnings[0].slice(warnings[0].indexOf(": ") + 2) };
}

describe("OpenClaw's example configs", () => {
  it("openclaw-example-configs-load-or-warn-once: every fixture loads, or warns once naming the ignored keys", () => {
    const files = fs
      .readdirSync(fixtures)
      .filter((f) => f.endsWith(".json5"))
      .sort();
    expect(files.length).toBeGreaterThanOrEqual(40);
    const outcomes = files.map(loadFixture);
    // the table for the closing note
    console.log(outcomes.map((o) => `${o.fixture.padEnd(52)} ${o.text}`).join("\n"));
    for (const o of outcomes) {
      const provider = builtInProviderOnly[o.fixture];
      if (provider) {
        expect(o.result, o.fixture).toBe("refused");
        expect(o.text, o.fixture).toMatch(new RegExp(`unknown provider "${provider}"`));
        expect(o.text, o.fixture).not.toMatch(/unknown key/);
        continue;
      }
      expect(o.result, `${o.fixture}: ${o.text}`).not.toBe("refused");
      if (o.result === "warns") {
        expect(o.text).toMatch(/^not supported by Loopgate, ignored \(OpenClaw keys Loopgate has no feature for\): /);
        for (const secret of exampleSecrets) expect(o.text, o.fixture).not.toContain(secret);
      }
    }
  });

  it("the warning is said once per process and file, on stderr when nobody asks for it", () => {
    const file = path.join(fixtures, "cron.json5");
    const writes: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => {
      writes.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      const first = loadConfig({ configPath: file, env: { ...userEnv } });
      loadConfig({ configPath: file, env: { ...userEnv } });
      expect(first.warning).toBe(
        "not supported by Loopgate, ignored (OpenClaw keys Loopgate has no feature for): cron.webhook, cron.webhookToken, cron.sessionRetention, cron.runLog.maxBytes",
      );
    } finally {
      process.stderr.write = original;
    }
    expect(writes).toEqual([
      `loopgate: warning: ${file}: ${loadConfig({ configPath: file, env: { ...userEnv }, onWarning: () => {} }).warning}\n`,
    ]);
  });

  it("a config object (parseConfig, as startGateway callers pass) warns about OpenClaw-only keys too", () => {
    const warnings: string[] = [];
    const config = parseConfig({ session: { dmScope: "main" }, gateway: { port: 1234 } }, undefined, (m) =>
      warnings.push(m),
    );
    expect(config.gateway.port).toBe(1234);
    expect(warnings).toEqual([
      "config: not supported by Loopgate, ignored (OpenClaw keys Loopgate has no feature for): session.dmScope",
    ]);
  });

  it("an unknown key that is not OpenClaw's is still an error naming its path", () => {
    const file = path.join(stateDir, "typo.json5");
    fs.writeFileSync(file, "{ gateway: { prot: 1 }, cron: { webhook: 'https://example.invalid' } }");
    expect(() => loadConfig({ configPath: file, env: { ...userEnv }, onWarning: () => {} })).toThrow(
      /gateway\.prot: unknown key/,
    );
  });
});
