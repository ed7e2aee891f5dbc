import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfigCached } from "./cached.js";
import { loadConfig } from "./load.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function setup(text: string) {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-cfgcache-"));
  dirs.push(stateDir);
  const file = path.join(stateDir, "loopgate.json5");
  fs.writeFileSync(file, text);
  return { stateDir, file, env: { LOOPGATE_STATE_DIR: stateDir } as NodeJS.ProcessEnv };
}

describe("config cache for one-shot CLI processes", () => {
  it("gives the same config as a full validation, first from the schema and then from the cache", async () => {
    const { stateDir, env } = setup(
      '{ agents: { defaults: { timeoutSeconds: 30, model: { primary: "s/m" } } }, models: { providers: { s: { api: "openai-completions" } } } }',
    );
    const fresh = loadConfig({ env });
    const first = await loadConfigCached({ env });
    expect(fs.readdirSync(path.join(stateDir, "cache")).length).toBe(1);
    const second = await loadConfigCached({ env });
    expect(first.config).toEqual(fresh.config);
    expect(second.config).toEqual(fresh.config);
    expect(second.config.agents.defaults.timeoutSeconds).toBe(30);
  });

  it("sees an edit of the file at once", async () => {
    const { file, env } = setup("{ agents: { defaults: { timeoutSeconds: 30 } } }");
    await loadConfigCached({ env });
    fs.writeFileSync(file, "{ agents: { defaults: { timeoutSeconds: 45 } } }");
    expect((await loadConfigCached({ env })).config.agents.defaults.timeoutSeconds).toBe(45);
  });

  it("never caches a bad file: it is reported with its key path every time", async () => {
    const { env } = setup('{ models: { providers: { local: { api: "openai-completions", baseUrl: "nope" } } } }');
    for (let i = 0; i < 2; i++) {
      await expect(loadConfigCached({ env })).rejects.toThrow(/models\.providers\.local\.baseUrl: expected a URL/);
    }
  });

  it("applies env-only providers after the cache, so a key set later is still picked up", async () => {
    const { env } = setup("{}");
    await loadConfigCached({ env });
    const withKey = await loadConfigCached({ env: { ...env, OPENAI_API_KEY: "sk-x" } });
    expect(withKey.config.models.providers.openai?.api).toBe("openai-completions");
    expect((await loadConfigCached({ env })).config.models.providers.openai).toBeUndefined();
  });
});
