import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfigCached } from "./cached.js";
import { ConfigError, loadConfig } from "./load.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function configFile(text: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-check-"));
  dirs.push(dir);
  const file = path.join(dir, "loopgate.json5");
  fs.writeFileSync(file, text);
  return { dir, file, env: { LOOPGATE_STATE_DIR: dir } as NodeJS.ProcessEnv };
}

function problemsOf(load: () => unknown): { problems: string[]; file?: string } {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return { problems: err.problems, file: err.file };
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("problems found when the config is loaded", () => {
  it("an unset env reference in apiKey names the variable and the key path", () => {
    const { file, env } = configFile(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a config env reference, as a user writes it
      '{ models: { providers: { local: { api: "openai-completions", apiKey: "${LG_NOPE}" } } } }',
    );
    const { problems, file: reported } = problemsOf(() => loadConfig({ env }));
    expect(reported).toBe(file);
    expect(problems).toEqual([
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the reference as the message quotes it
      "models.providers.local.apiKey: references ${LG_NOPE}, which is not set in the environment",
    ]);
    expect(() => loadConfig({ env: { ...env, LG_NOPE: "sk" } })).not.toThrow();
  });

  it("a metrics bind without a metrics port, or a metrics port that is the gateway's, is refused naming the key", () => {
    const bindOnly = configFile('{ gateway: { metrics: { enabled: true, bind: "lan" } } }');
    expect(problemsOf(() => loadConfig({ env: bindOnly.env })).problems).toEqual([
      "gateway.metrics.bind: needs gateway.metrics.port (without a port of its own, /metrics is served on the gateway's port)",
    ]);
    const samePort = configFile("{ gateway: { port: 18800, metrics: { enabled: true, port: 18800 } } }");
    expect(problemsOf(() => loadConfig({ env: samePort.env })).problems).toEqual([
      "gateway.metrics.port: 18800 is gateway.port; leave it unset to serve /metrics on the gateway's port",
    ]);
    const fine = configFile('{ gateway: { port: 18800, metrics: { enabled: true, port: 18801, bind: "loopback" } } }');
    expect(() => loadConfig({ env: fine.env })).not.toThrow();
  });

  it("a scripted provider needs a script that exists", () => {
    const { dir, env } = configFile(
      '{ models: { providers: { none: { api: "scripted" }, gone: { api: "scripted", script: "./turns.json5" } } } }',
    );
    expect(problemsOf(() => loadConfig({ env })).problems).toEqual([
      'models.providers.none.script: required for api "scripted" (the JSON5 script to play)',
      `models.providers.gone.script: file not found: ${path.join(dir, "turns.json5")}`,
    ]);
  });

  it("an agent model naming an unknown provider is reported; OPENAI_API_KEY makes openai known", () => {
    const { env } = configFile(
      '{ agents: { defaults: { model: { primary: "openai/gpt-4o" } }, list: [{ id: "main" }, { id: "r", model: "ghost/m" }] } }',
    );
    expect(problemsOf(() => loadConfig({ env })).problems).toEqual([
      'agents.defaults.model.primary: unknown provider "openai" in "openai/gpt-4o" (configured providers: none)',
      'agents.list[1].model: unknown provider "ghost" in "ghost/m" (configured providers: none)',
    ]);
    expect(problemsOf(() => loadConfig({ env: { ...env, OPENAI_API_KEY: "sk" } })).problems).toEqual([
      'agents.list[1].model: unknown provider "ghost" in "ghost/m" (configured providers: openai)',
    ]);
  });

  it("fallback models and the compaction model naming an unknown provider are reported with their key paths", () => {
    const { env } = configFile(
      '{ agents: { defaults: { model: { fallbacks: ["nope/x"] }, compaction: { model: "gone/s" } }, list: [{ id: "main", model: { primary: "ghost/a", fallbacks: ["ghost/b"] } }] } }',
    );
    expect(problemsOf(() => loadConfig({ env })).problems).toEqual([
      'agents.defaults.model.fallbacks[0]: unknown provider "nope" in "nope/x" (configured providers: none)',
      'agents.defaults.compaction.model: unknown provider "gone" in "gone/s" (configured providers: none)',
      'agents.list[0].model.primary: unknown provider "ghost" in "ghost/a" (configured providers: none)',
      'agents.list[0].model.fallbacks[0]: unknown provider "ghost" in "ghost/b" (configured providers: none)',
    ]);
  });

  it("more than one default agent, or the same id twice, is an error", () => {
    const { env } = configFile(
      '{ agents: { list: [{ id: "a", default: true }, { id: "b", default: true }, { id: "a" }] } }',
    );
    expect(problemsOf(() => loadConfig({ env })).problems).toEqual([
      "agents.list[1].default: only one agent can be the default (agents.list[0] already is)",
      'agents.list[2].id: duplicate agent id "a" (also agents.list[0])',
    ]);
  });

  it("every problem of the file is reported at once, not only the first", () => {
    const { env } = configFile(
      '{ diagnostics: { stuckSessionWarnMs: 2000, stuckSessionAbortMs: 1000 }, models: { providers: { s: { api: "scripted" } } }, agents: { defaults: { model: { primary: "x/y" } } } }',
    );
    const { problems } = problemsOf(() => loadConfig({ env }));
    expect(problems.map((p) => p.slice(0, p.indexOf(":")))).toEqual([
      "models.providers.s.script",
      "agents.defaults.model.primary",
      "diagnostics.stuckSessionAbortMs",
    ]);
  });

  it("the CLI's cached loader reports them too, and never caches a file that fails them", async () => {
    const { dir, env } = configFile('{ models: { providers: { s: { api: "scripted", script: "./t.json5" } } } }');
    await expect(loadConfigCached({ env })).rejects.toThrow(/models\.providers\.s\.script: file not found/);
    expect(fs.existsSync(path.join(dir, "cache"))).toBe(false);
    fs.writeFileSync(path.join(dir, "t.json5"), "[]");
    await loadConfigCached({ env });
    fs.rmSync(path.join(dir, "t.json5"));
    // a cache hit still checks: the script went away after the config was cached
    await expect(loadConfigCached({ env })).rejects.toThrow(/file not found/);
  });
});
