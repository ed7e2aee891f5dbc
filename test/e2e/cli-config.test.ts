/*
 * `loopgate config validate|path` and unknown agent ids, as a user meets them: real `node dist/cli/main.js`
 * processes (run `npm run build` first) in a temp state directory; the gateway case talks to a real gateway on
 * 127.0.0.1.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { startGateway } from "../../src/gateway/server.js";
import { silentLogger } from "../../src/infra/logger.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(root, "dist", "cli", "main.js");
const script = path.join(root, "test", "fixtures", "cli", "hello.script.json5");

beforeAll(() => {
  if (!fs.existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` first`);
});
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});

function sandbox() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-cfgcli-")));
  temps.push(tmp);
  const stateDir = path.join(tmp, "state");
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(LOOPGATE_|OPENCLAW_|OPENAI_|ANTHROPIC_)/.test(k)) env[k] = v;
  }
  Object.assign(env, { LOOPGATE_STATE_DIR: stateDir, HOME: tmp, NO_COLOR: "1" });
  const run = (args: string[], extraEnv: NodeJS.ProcessEnv = {}) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [cli, ...args], { cwd: tmp, env: { ...env, ...extraEnv } });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        stdout += c;
      });
      child.stderr.setEncoding("utf8").on("data", (c: string) => {
        stderr += c;
      });
      const guard = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(guard);
        resolve({ code, stdout, stderr });
      });
    });
  const write = (name: string, config: unknown) => {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, JSON.stringify(config, null, 2));
    return file;
  };
  return { tmp, stateDir, run, write };
}

const twoAgents = {
  agents: {
    defaults: { model: { primary: "s/m" } },
    list: [{ id: "main" }, { id: "research", name: "Research bot" }],
  },
  models: { providers: { s: { api: "scripted", script } } },
};

describe("loopgate config validate / path", () => {
  it("validate: exit 0 with the file and its agents; exit 2 with every problem, as text or JSON", async () => {
    const s = sandbox();
    const good = s.write("good.json5", twoAgents);
    const ok = await s.run(["config", "validate", "--config", good]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`config OK: ${good}`);
    expect(ok.stdout).toContain("agents: main (default), research (Research bot)");

    const bad = s.write("bad.json5", {
      models: { providers: { s: { api: "scripted" } } },
      diagnostics: { stuckSessionWarnMs: 2000, stuckSessionAbortMs: 1000 },
    });
    const text = await s.run(["config", "validate", "--config", bad]);
    expect(text.code).toBe(2);
    expect(text.stderr).toContain(`invalid config ${bad}`);
    expect(text.stderr).toContain(
      "diagnostics.stuckSessionAbortMs: must be greater than diagnostics.stuckSessionWarnMs",
    );
    expect(text.stderr).toContain('models.providers.s.script: required for api "scripted"');

    const json = await s.run(["config", "validate", "--json", "--config", bad]);
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ ok: false, file: bad, exists: true });
    expect(report.problems.map((p: { path: string }) => p.path)).toEqual([
      "models.providers.s.script",
      "diagnostics.stuckSessionAbortMs",
    ]);

    const none = await s.run(["config", "validate"]);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain(`no file at ${path.join(s.stateDir, "loopgate.json5")}; defaults apply`);
  });

  it("oversized-config-refused-unread: a 100 MB config file is refused at once, naming its size and the limit", async () => {
    const s = sandbox();
    const file = path.join(s.tmp, "huge.json5");
    // 100 MB of valid JSON5, written in pieces
    const fd = fs.openSync(file, "w");
    fs.writeSync(fd, '{ notes: "');
    const chunk = Buffer.alloc(1024 * 1024, 0x78);
    for (let i = 0; i < 100; i++) fs.writeSync(fd, chunk);
    fs.writeSync(fd, '" }');
    fs.closeSync(fd);
    const t0 = performance.now();
    const res = await s.run(["config", "validate", "--config", file]);
    const ms = Math.round(performance.now() - t0);
    fs.rmSync(file);
    console.log(
      `[config] validate a 100 MB config: exit ${res.code} in ${ms} ms: ${res.stderr.trim().split("\n").pop()}`,
    );
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`invalid config ${file}`);
    expect(res.stderr).toContain("(file): 104857613 bytes; a config file may be at most 1048576 bytes (1 MiB)");
  });

  it("path: the file a run would use, from --config, LOOPGATE_CONFIG or the state dir, and whether it exists", async () => {
    const s = sandbox();
    const dflt = await s.run(["config", "path"]);
    expect(dflt.code).toBe(0);
    expect(dflt.stdout.trim()).toBe(path.join(s.stateDir, "loopgate.json5"));
    expect(dflt.stderr).toContain("does not exist; defaults apply");
    const file = s.write("mine.json5", {});
    const fromEnv = await s.run(["config", "path", "--json"], { LOOPGATE_CONFIG: file });
    expect(JSON.parse(fromEnv.stdout)).toEqual({ file, exists: true, from: "LOOPGATE_CONFIG" });
    const fromFlag = await s.run(["config", "path", "--json", "--config", "other.json5"], { LOOPGATE_CONFIG: file });
    expect(JSON.parse(fromFlag.stdout)).toEqual({
      file: path.join(s.tmp, "other.json5"),
      exists: false,
      from: "--config",
    });
  });
});

describe("an unknown agent id", () => {
  it("agent --local: exit 2 listing the configured agents, and nothing is created", async () => {
    const s = sandbox();
    const config = s.write("c.json5", twoAgents);
    const res = await s.run(["agent", "--local", "-m", "hi", "--agent", "reserch", "--config", config]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(
      '--agent: unknown agent "reserch"; configured agents: main (default), research (Research bot)',
    );
    expect(fs.existsSync(path.join(s.stateDir, "loopgate.sqlite"))).toBe(false);
    expect(fs.existsSync(path.join(s.stateDir, "workspace-reserch"))).toBe(false);
  });

  it("skills install --agent: exit 2 listing the configured agents", async () => {
    const s = sandbox();
    const config = s.write("c.json5", twoAgents);
    // an existing folder, so the agent id is what is wrong (a missing path is its own usage error)
    const skillDir = path.dirname(config);
    const res = await s.run(["skills", "install", skillDir, "--agent", "ghost", "--config", config]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--agent: unknown agent "ghost"; configured agents: main (default), research');
    expect(fs.existsSync(path.join(s.stateDir, "workspace-ghost"))).toBe(false);
  });

  it("agent through the gateway: the gateway refuses it naming the param, the CLI exits 2, no session is stored", async () => {
    const s = sandbox();
    const gw = await startGateway({
      config: parseConfig(twoAgents),
      stateDir: s.stateDir,
      port: 0,
      logger: silentLogger,
    });
    try {
      const res = await s.run(["agent", "-m", "hi", "--agent", "ghost", "--url", gw.url]);
      expect(res.code).toBe(2);
      expect(res.stderr).toContain(
        'params.agentId: unknown agent "ghost"; configured agents: main (default), research',
      );
      expect(await gw.service.rt.store.countSessions()).toBe(0);
    } finally {
      await gw.close();
    }
  });
});

describe("OpenClaw habits: .env, LOOPGATE_CONFIG_PATH and OpenClaw-only keys", () => {
  it("dotenv-and-config-path-reach-the-cli: a .env in the current directory names the config, and its OpenClaw-only keys warn once", async () => {
    const { tmp, run, write } = sandbox();
    const file = write("openclaw.json5", {
      agents: { defaults: { model: "s/m", heartbeat: { every: "30m" } } },
      models: { mode: "merge", providers: { s: { api: "scripted", script } } },
      gateway: { auth: { mode: "token", token: "secret-in-config" } },
    });
    fs.writeFileSync(path.join(tmp, ".env"), `LOOPGATE_CONFIG_PATH=${file}\n`);
    const where = await run(["config", "path", "--json"]);
    expect(JSON.parse(where.stdout)).toEqual({ file, exists: true, from: "LOOPGATE_CONFIG_PATH" });
    const text = await run(["config", "validate"]);
    console.log(text.stderr);
    expect(text.code).toBe(0);
    const warnings = text.stderr.split("\n").filter((l) => l.includes("not supported by Loopgate"));
    expect(warnings).toEqual([
      `loopgate: warning: ${file}: not supported by Loopgate, ignored (OpenClaw keys Loopgate has no feature for): agents.defaults.heartbeat, gateway.auth.mode`,
    ]);
    expect(text.stderr + text.stdout).not.toContain("secret-in-config");
    const json = await run(["config", "validate", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: true,
      file,
      warning: expect.stringContaining("gateway.auth.mode"),
    });
    expect(json.stderr).not.toContain("not supported");
  });

  it("cli-model-alias-bare-id-and-thinking-xhigh: --model takes an alias or a bare id, --thinking xhigh and adaptive", async () => {
    const { run, write } = sandbox();
    const file = write("aliases.json5", {
      agents: { defaults: { model: "s/m", models: { "s/m": { alias: "quick" }, "t/m": {} } } },
      models: {
        providers: {
          s: { api: "scripted", script, models: [{ id: "m" }] },
          t: { api: "scripted", script, models: [{ id: "m" }, { id: "solo" }] },
        },
      },
    });
    const ask = (...extra: string[]) => run(["agent", "--local", "--config", file, "--message", "hi", ...extra]);
    const alias = await ask("--model", "quick", "--thinking", "xhigh");
    expect(alias.code, alias.stderr).toBe(0);
    expect(alias.stdout).toContain("Hello, hi!");
    expect((await ask("--thinking", "adaptive")).code).toBe(0);
    // "m" is listed by s and t: ambiguous; "solo" is t's alone but outside the allowlist
    const ambiguous = await ask("--model", "m");
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('model "m" is ambiguous: s/m, t/m; name one of them');
    const refused = await ask("--model", "solo");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('model "t/solo" is not allowed: agents.defaults.models lists s/m (quick), t/m');
  });
});
