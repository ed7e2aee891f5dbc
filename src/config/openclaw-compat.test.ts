import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentService, RunParamError } from "../agent/service.js";
import { silentLogger } from "../infra/logger.js";
import { sqliteRuntime } from "../node/compose.js";
import { sessionsPatchParamsSchema } from "../protocol/params.js";
import { ScriptedProvider } from "../providers/scripted.js";
import type { ModelRequest } from "../providers/types.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { loadDotEnvFiles } from "./dotenv.js";
import { loadConfig, parseConfig } from "./load.js";
import { locateConfigFile } from "./source.js";
import { resolveStateDir } from "./state-dir.js";

/*
 * Issue 27 item 4: what an OpenClaw config and an OpenClaw user's habits (aliases, bare model ids, thinking levels,
 * env names, .env files) need from Loopgate. Real config files, a real runtime over a real SQLite file.
 */

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-occompat-"));
  dirs.push(dir);
  return dir;
}

/** A runtime whose scripted providers `a` and `b` record which model each request asked for. */
function runtime(raw: Record<string, unknown>) {
  const dir = tmp();
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  stores.push(store);
  const requests: Array<{ provider: string; req: ModelRequest }> = [];
  const provider = (id: string) =>
    new ScriptedProvider(id, (req) => {
      requests.push({ provider: id, req });
      return { text: "hi" };
    });
  const rt = sqliteRuntime({
    config: parseConfig(raw),
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    logger: silentLogger,
    providers: { a: provider("a"), b: provider("b") },
    tools: [],
  });
  const service = new AgentService(rt);
  let n = 0;
  const run = async (extra: Record<string, unknown> = {}) => {
    const accepted = await service.accept({ message: "hello", idempotencyKey: `r${++n}`, ...extra });
    return service.final(accepted.runId);
  };
  return { service, requests, run, last: () => requests.at(-1) };
}

const providers = {
  a: { api: "scripted", models: [{ id: "small" }, { id: "shared" }] },
  b: { api: "scripted", models: [{ id: "big" }, { id: "shared" }] },
};

describe("OpenClaw model config", () => {
  it("openclaw-string-model-config-loads: agents.defaults.model as a string is the primary, like {primary}", async () => {
    const asString = parseConfig({ agents: { defaults: { model: "a/small" } }, models: { providers } });
    const asObject = parseConfig({ agents: { defaults: { model: { primary: "a/small" } } }, models: { providers } });
    expect(asString.agents.defaults.model).toEqual({ primary: "a/small", fallbacks: [] });
    expect(asString).toEqual(asObject);
    const h = runtime({ agents: { defaults: { model: "b/big" } }, models: { providers } });
    const final = await h.run();
    expect(final.status, final.error).toBe("ok");
    expect(h.last()).toMatchObject({ provider: "b", req: { model: "big" } });
    // a string that is no model ref still says what was expected, and where
    expect(() => parseConfig({ agents: { defaults: { model: "gpt" } } })).toThrow(
      /agents\.defaults\.model\.primary: expected "<provider>\/<model>"/,
    );
  });

  it("openclaw-model-aliases-and-allowlist: agents.defaults.models aliases choose a model; outside the list is refused", async () => {
    const h = runtime({
      agents: {
        defaults: {
          model: "a/small",
          models: { "a/small": { alias: "quick" }, "b/big": { alias: "Deep" }, "b/*": {} },
        },
      },
      models: { providers },
    });
    // an alias in a run's request (what --model and a cron job's model send)
    expect((await h.run({ model: "deep" })).status).toBe("ok");
    expect(h.last()).toMatchObject({ provider: "b", req: { model: "big" } });
    // "b/*" allows every model of b
    expect((await h.run({ model: "b/shared" })).status).toBe("ok");
    expect(h.last()).toMatchObject({ provider: "b", req: { model: "shared" } });
    // outside the allowlist: refused before anything runs, naming what is allowed
    await expect(h.service.accept({ message: "x", idempotencyKey: "no", model: "a/shared" })).rejects.toThrow(
      RunParamError,
    );
    await expect(h.service.accept({ message: "x", idempotencyKey: "no2", model: "a/shared" })).rejects.toThrow(
      'model "a/shared" is not allowed: agents.defaults.models lists a/small (quick), b/big (Deep), b/*',
    );
    // sessions.patch model: an alias is stored as the model it names; a refused one changes nothing
    expect(sessionsPatchParamsSchema.safeParse({ key: "agent:main:main", model: "quick" }).success).toBe(true);
    const patched = await h.service.patchSession("agent:main:main", { model: "quick" });
    expect(patched?.modelOverride).toBe("a/small");
    await expect(h.service.patchSession("agent:main:main", { model: "a/shared" })).rejects.toThrow(/not allowed/);
    expect((await h.service.session("agent:main:main"))?.modelOverride).toBe("a/small");
  });

  it("bare-model-id-resolves-or-lists-candidates: one provider listing the id picks it; several are named", async () => {
    const h = runtime({ agents: { defaults: { model: "a/small" } }, models: { providers } });
    expect((await h.run({ model: "big" })).status).toBe("ok");
    expect(h.last()).toMatchObject({ provider: "b", req: { model: "big" } });
    await expect(h.service.accept({ message: "x", idempotencyKey: "amb", model: "shared" })).rejects.toThrow(
      'model "shared" is ambiguous: a/shared, b/shared; name one of them',
    );
    await expect(h.service.accept({ message: "x", idempotencyKey: "unk", model: "gpt-9" })).rejects.toThrow(
      /unknown model "gpt-9": expected "<provider>\/<model>", an alias \(none configured\) or a model id/,
    );
  });

  it("openclaw-models-mode-merge-and-replace: replace uses the configured providers alone, merge adds the env ones", () => {
    const dir = tmp();
    const file = path.join(dir, "loopgate.json5");
    const env = { LOOPGATE_STATE_DIR: dir, OPENAI_API_KEY: "sk-test" };
    const write = (mode: string) =>
      fs.writeFileSync(
        file,
        `{ models: { mode: "${mode}", providers: { a: { api: "scripted", script: "s.json5" } } } }`,
      );
    fs.writeFileSync(path.join(dir, "s.json5"), "{ turns: [] }");
    write("merge");
    expect(Object.keys(loadConfig({ configPath: file, env }).config.models.providers).sort()).toEqual(["a", "openai"]);
    write("replace");
    expect(Object.keys(loadConfig({ configPath: file, env }).config.models.providers)).toEqual(["a"]);
  });

  it("openclaw-thinking-levels-accepted: xhigh and adaptive in config, sessions.patch and a run", async () => {
    expect(parseConfig({ agents: { defaults: { thinkingDefault: "xhigh" } } }).agents.defaults.thinkingDefault).toBe(
      "xhigh",
    );
    expect(sessionsPatchParamsSchema.safeParse({ key: "k", thinkingLevel: "adaptive" }).success).toBe(true);
    const h = runtime({
      agents: { defaults: { model: "a/small", thinkingDefault: "adaptive" } },
      models: { providers },
    });
    await h.run();
    expect(h.last()?.req.thinking).toBe("adaptive");
    await h.run({ thinking: "xhigh" });
    expect(h.last()?.req.thinking).toBe("xhigh");
  });
});

describe("where the config and its variables come from", () => {
  it("loopgate-config-path-env-names-the-file: LOOPGATE_CONFIG_PATH, then LOOPGATE_CONFIG, then the state dir", () => {
    const dir = tmp();
    const a = path.join(dir, "a.json5");
    const b = path.join(dir, "b.json5");
    fs.writeFileSync(a, "{ gateway: { port: 1111 } }");
    fs.writeFileSync(b, "{ gateway: { port: 2222 } }");
    const base = { LOOPGATE_STATE_DIR: dir };
    expect(locateConfigFile({ env: { ...base, LOOPGATE_CONFIG_PATH: a, LOOPGATE_CONFIG: b } })).toMatchObject({
      file: a,
      from: "LOOPGATE_CONFIG_PATH",
    });
    expect(loadConfig({ env: { ...base, LOOPGATE_CONFIG_PATH: a } }).config.gateway.port).toBe(1111);
    expect(loadConfig({ env: { ...base, LOOPGATE_CONFIG: b } }).config.gateway.port).toBe(2222);
    expect(locateConfigFile({ env: base })).toMatchObject({ file: path.join(dir, "loopgate.json5"), from: "default" });
    expect(() => loadConfig({ env: { ...base, LOOPGATE_CONFIG_PATH: path.join(dir, "none.json5") } })).toThrow(
      /none\.json5:\n {2}- file not found/,
    );
  });

  it("dotenv-files-fill-missing-variables: the current directory's .env, then the state dir's; set ones win", () => {
    const cwd = tmp();
    const state = tmp();
    fs.writeFileSync(
      path.join(cwd, ".env"),
      `LOOPGATE_STATE_DIR=${state}\nFROM_CWD=cwd\nSHARED=cwd\nALREADY=file\n# a comment\nQUOTED="a b"\n`,
    );
    fs.writeFileSync(path.join(state, ".env"), "SHARED=state\nFROM_STATE=state\n");
    const env: NodeJS.ProcessEnv = { ALREADY: "env" };
    const read = loadDotEnvFiles(env, cwd, resolveStateDir);
    expect(env).toMatchObject({
      FROM_CWD: "cwd",
      SHARED: "cwd",
      FROM_STATE: "state",
      ALREADY: "env",
      QUOTED: "a b",
      LOOPGATE_STATE_DIR: state,
    });
    // names only: what the CLI could report never holds a value
    expect(read.map((f) => ({ file: f.file, applied: f.applied.sort() }))).toEqual([
      { file: path.join(cwd, ".env"), applied: ["FROM_CWD", "LOOPGATE_STATE_DIR", "QUOTED", "SHARED"] },
      { file: path.join(state, ".env"), applied: ["FROM_STATE"] },
    ]);
    expect(loadDotEnvFiles({}, tmp(), () => tmp())).toEqual([]);
  });

  it("openclaw-env-block-fills-missing-variables: env and env.vars count for $NAME references", () => {
    const dir = tmp();
    const file = path.join(dir, "loopgate.json5");
    fs.writeFileSync(
      file,
      `{ env: { KEY_ONE: "sk-one", vars: { KEY_TWO: "sk-two" } },
         models: { providers: { p: { api: "openai-completions", apiKey: "\${KEY_ONE}" },
                                q: { api: "openai-completions", apiKey: "\${KEY_TWO}" } } } }`,
    );
    const env: NodeJS.ProcessEnv = { LOOPGATE_STATE_DIR: dir, KEY_TWO: "from-env" };
    const warnings: string[] = [];
    loadConfig({ configPath: file, env, onWarning: (m) => warnings.push(m) });
    expect(env.KEY_ONE).toBe("sk-one");
    expect(env.KEY_TWO).toBe("from-env");
    expect(warnings).toEqual([]);
  });
});
