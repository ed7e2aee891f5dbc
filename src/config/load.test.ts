// biome-ignore-all lint/suspicious/noTemplateCurlyInString: "${VAR}" is the config's own env-reference syntax
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseConfig, resolveSecretRef } from "./load.js";

let dir: string;
let stateDir: string;

beforeEach(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-config-")));
  stateDir = path.join(dir, "state");
  fs.mkdirSync(stateDir);
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

/** Runs `fn`, expecting a ConfigError; returns it. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError, but nothing was thrown");
}

/** An environment with only what the test gives it: never the developer's real keys or home. */
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ LOOPGATE_STATE_DIR: stateDir, ...extra });

describe("bad config", () => {
  it("reports every problem at once, each with its key path", () => {
    const err = configError(() =>
      parseConfig({
        agents: { defaults: { timeoutSeconds: "soon", maxSteps: -1, surprise: true } },
        models: { providers: { local: { api: "openai-completions", baseUrl: "localhost:11434" } } },
        messages: { queue: { mode: "shout" } },
        gateway: { port: 70000 },
        telemetry: {},
      }),
    );
    const problems = err.problems;
    expect(problems).toContain("models.providers.local.baseUrl: expected a URL (http:// or https://)");
    expect(problems).toContain("agents.defaults.surprise: unknown key");
    expect(problems).toContain("telemetry: unknown key");
    expect(problems.find((p) => p.startsWith("agents.defaults.timeoutSeconds: "))).toMatch(/expected number/);
    expect(problems.find((p) => p.startsWith("agents.defaults.maxSteps: "))).toBeDefined();
    expect(problems.find((p) => p.startsWith("messages.queue.mode: "))).toMatch(/steer/);
    expect(problems.find((p) => p.startsWith("gateway.port: "))).toBeDefined();
    expect(problems).toHaveLength(7);
    // the message shown to the user lists them all
    for (const p of problems) expect(err.message).toContain(p);
  });

  it("array positions appear in the key path", () => {
    const err = configError(() => parseConfig({ agents: { list: [{ id: "ok" }, { id: "has space" }] } }));
    expect(err.problems).toEqual([expect.stringMatching(/^agents\.list\[1\]\.id: expected an agent id/)]);
  });

  it("a bad model reference explains the expected form", () => {
    const err = configError(() => parseConfig({ agents: { defaults: { model: { primary: "gpt-4o" } } } }));
    expect(err.problems).toEqual([
      'agents.defaults.model.primary: expected "<provider>/<model>", e.g. "openai/gpt-4o-mini"',
    ]);
  });

  it("a bad file names the file and lists the problems with key paths", () => {
    const file = write(
      "bad.json5",
      `{
        // comments are fine in JSON5
        models: { providers: { local: { api: "openai-completions", baseUrl: "not a url" } } },
        agents: { defaults: { timeoutSeconds: "48h" } },
      }`,
    );
    const err = configError(() => loadConfig({ configPath: file, env: env() }));
    expect(err.file).toBe(file);
    expect(err.message).toContain(file);
    expect(err.message).toContain("models.providers.local.baseUrl: expected a URL");
    expect(err.message).toContain("agents.defaults.timeoutSeconds:");
  });

  it("a JSON5 syntax error gives the line and column", () => {
    const file = write("syntax.json5", "{\n  agents: {\n    defaults: { timeoutSeconds: 10 }\n  ,,\n}\n");
    const err = configError(() => loadConfig({ configPath: file, env: env() }));
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(/^not valid JSON5 at line 4, column 4/);
  });

  it("oversized-config-refused-unread: a config file over 1 MiB is refused naming its size and the limit", () => {
    // valid JSON5 all the way: without the cap it would be parsed whole, then refused for its unknown key
    const file = write("huge.json5", `{ notes: "${"x".repeat(2 * 1024 * 1024)}" }`);
    const err = configError(() => loadConfig({ configPath: file, env: env() }));
    expect(err.file).toBe(file);
    expect(err.problems).toEqual([
      "(file): 2097165 bytes; a config file may be at most 1048576 bytes (1 MiB): is this the right file?",
    ]);
    // at the limit it is read as usual
    const atLimit = write("full.json5", `{ gateway: { port: 1 } }${" ".repeat(1024 * 1024 - 24)}`);
    expect(fs.statSync(atLimit).size).toBe(1024 * 1024);
    expect(loadConfig({ configPath: atLimit, env: env() }).config.gateway.port).toBe(1);
  });

  it("a file that is not an object is refused", () => {
    const file = write("list.json5", "[1, 2]");
    expect(configError(() => loadConfig({ configPath: file, env: env() })).problems).toEqual([
      "(root): expected an object",
    ]);
  });
});

describe("which config file is read", () => {
  it("a --config path that does not exist is an error naming it", () => {
    const missing = path.join(dir, "nope.json5");
    const err = configError(() => loadConfig({ configPath: missing, env: env() }));
    expect(err.file).toBe(missing);
    expect(err.problems).toEqual(["file not found"]);
  });

  it("no file at the default path is fine: defaults apply", () => {
    const loaded = loadConfig({ env: env() });
    expect(loaded.file).toBeUndefined();
    expect(loaded.stateDir).toBe(stateDir);
    expect(loaded.config.agents.defaults.timeoutSeconds).toBe(172800);
  });

  it("the default file is $LOOPGATE_STATE_DIR/loopgate.json5", () => {
    const file = write("state/loopgate.json5", "{ gateway: { port: 19000 } }");
    const loaded = loadConfig({ env: env() });
    expect(loaded.file).toBe(file);
    expect(loaded.config.gateway.port).toBe(19000);
  });

  it("LOOPGATE_CONFIG beats the default file", () => {
    write("state/loopgate.json5", "{ gateway: { port: 19000 } }");
    const other = write("elsewhere/custom.json5", "{ gateway: { port: 19001 } }");
    const loaded = loadConfig({ env: env({ LOOPGATE_CONFIG: other }) });
    expect(loaded.file).toBe(other);
    expect(loaded.config.gateway.port).toBe(19001);
    expect(loaded.stateDir).toBe(stateDir); // the state dir does not follow the config file
  });

  it("--config beats LOOPGATE_CONFIG", () => {
    const fromEnv = write("env.json5", "{ gateway: { port: 19001 } }");
    const fromFlag = write("flag.json5", "{ gateway: { port: 19002 } }");
    const loaded = loadConfig({ configPath: fromFlag, env: env({ LOOPGATE_CONFIG: fromEnv }) });
    expect(loaded.file).toBe(fromFlag);
    expect(loaded.config.gateway.port).toBe(19002);
  });

  it("a LOOPGATE_CONFIG that does not exist is an error too (it was asked for)", () => {
    const missing = path.join(dir, "gone.json5");
    expect(configError(() => loadConfig({ env: env({ LOOPGATE_CONFIG: missing }) })).file).toBe(missing);
  });

  it("LOOPGATE_STATE_DIR decides where state lives", () => {
    const other = path.join(dir, "other-state");
    expect(loadConfig({ env: { LOOPGATE_STATE_DIR: other } }).stateDir).toBe(other);
  });

  it("paths in the config are relative to the config file, not to the working directory", () => {
    const file = write(
      "conf/loopgate.json5",
      `{ models: { providers: { s: { api: "scripted", script: "scripts/turns.json5" } } }, skills: { dirs: ["../skills"] } }`,
    );
    write("conf/scripts/turns.json5", "[]"); // a missing script is a load-time error
    const loaded = loadConfig({ configPath: file, env: env() });
    expect(loaded.config.models.providers.s.script).toBe(path.join(dir, "conf", "scripts", "turns.json5"));
    expect(loaded.config.skills.dirs).toEqual([path.join(dir, "skills")]);
  });
});

describe("API keys and environment providers", () => {
  it("${ENV} references resolve from the environment, whole or embedded", () => {
    expect(resolveSecretRef("${MY_KEY}", "models.providers.x.apiKey", { MY_KEY: "sk-123" })).toBe("sk-123");
    expect(resolveSecretRef("Bearer ${TOKEN}", "models.providers.x.headers.Authorization", { TOKEN: "t0k" })).toBe(
      "Bearer t0k",
    );
    expect(resolveSecretRef("literal-key", "models.providers.x.apiKey", {})).toBe("literal-key");
    expect(resolveSecretRef(undefined, "models.providers.x.apiKey", {})).toBeUndefined();
  });

  it("an unset ${ENV} reference is an error that names the key path and the variable", () => {
    const err = configError(() => resolveSecretRef("${LOCAL_LLM_KEY}", "models.providers.local.apiKey", {}));
    expect(err.problems).toEqual([
      "models.providers.local.apiKey: references ${LOCAL_LLM_KEY}, which is not set in the environment",
    ]);
    // an empty variable counts as unset
    expect(() => resolveSecretRef("${LOCAL_LLM_KEY}", "models.providers.local.apiKey", { LOCAL_LLM_KEY: "" })).toThrow(
      /models\.providers\.local\.apiKey/,
    );
  });

  it("with no config and no API key variables there are no providers and no model", () => {
    const { config } = loadConfig({ env: env() });
    expect(config.models.providers).toEqual({});
    expect(config.agents.defaults.model.primary).toBeUndefined();
  });

  it("OPENAI_API_KEY alone brings the openai provider (key by reference, never copied) and makes it the default", () => {
    const { config } = loadConfig({ env: env({ OPENAI_API_KEY: "sk-test-openai" }) });
    expect(Object.keys(config.models.providers)).toEqual(["openai"]);
    expect(config.models.providers.openai).toMatchObject({ api: "openai-completions", apiKey: "${OPENAI_API_KEY}" });
    expect(config.agents.defaults.model.primary).toMatch(/^openai\//);
  });

  it("ANTHROPIC_API_KEY alone brings the anthropic provider", () => {
    const { config } = loadConfig({ env: env({ ANTHROPIC_API_KEY: "sk-ant-test" }) });
    expect(Object.keys(config.models.providers)).toEqual(["anthropic"]);
    expect(config.models.providers.anthropic).toMatchObject({
      api: "anthropic-messages",
      apiKey: "${ANTHROPIC_API_KEY}",
    });
    expect(config.agents.defaults.model.primary).toMatch(/^anthropic\//);
  });

  it("a provider configured under the same id is not replaced, and a configured model is kept", () => {
    const file = write(
      "c.json5",
      `{ agents: { defaults: { model: { primary: "openai/gpt-4.1" } } },
         models: { providers: { openai: { api: "openai-responses", apiKey: "\${WORK_OPENAI_KEY}" } } } }`,
    );
    const { config } = loadConfig({
      configPath: file,
      env: env({ OPENAI_API_KEY: "sk-personal", WORK_OPENAI_KEY: "sk-work" }),
    });
    expect(config.models.providers.openai).toMatchObject({ api: "openai-responses", apiKey: "${WORK_OPENAI_KEY}" });
    expect(config.agents.defaults.model.primary).toBe("openai/gpt-4.1");
  });
});
