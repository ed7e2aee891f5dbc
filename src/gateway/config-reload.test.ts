import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import type { LoopgateConfig } from "../config/schema.js";
import type { Logger } from "../infra/logger.js";
import { LiveConfig } from "../node/live-config.js";
import { ManualClock } from "../testing/manual-clock.js";
import { ConfigReloader, type ConfigWriteError, configHash } from "./config-reload.js";
import { redactConfig } from "./redact-config.js";

/*
 * The config file's reload and writes (SPEC 26) over a real file in a temp dir and a real LiveConfig: what is
 * applied, what is refused and logged, and what config.patch / config.apply leave on disk.
 */

const dirs: string[] = [];
const reloaders: ConfigReloader[] = [];
afterEach(() => {
  for (const r of reloaders.splice(0)) r.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

type Line = { level: string; message: string; fields?: Record<string, unknown> };

function capture(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}

const SECRET = "sk-live-secret-123";
const START = {
  models: {
    providers: {
      p: { api: "openai-completions", baseUrl: "http://127.0.0.1:9/v1", apiKey: SECRET, models: [{ id: "m" }] },
    },
  },
  agents: { defaults: { model: { primary: "p/m" } } },
  tools: { exec: { allowlist: ["echo *"] } },
};

function setup(opts: { mode?: "hybrid" | "off"; text?: string } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-reload-"));
  dirs.push(dir);
  const file = path.join(dir, "loopgate.json5");
  fs.writeFileSync(file, opts.text ?? JSON.stringify(START), { mode: 0o640 });
  const { logger, lines } = capture();
  const live = new LiveConfig(parseConfig(START, file), logger);
  const applied: LoopgateConfig[] = [];
  live.onApply("a spy", (next) => applied.push(next));
  const clock = new ManualClock();
  const reloader = new ConfigReloader({
    file,
    live,
    env: {},
    logger,
    clock,
    mode: opts.mode ?? "hybrid",
    debounceMs: 300,
  });
  reloaders.push(reloader);
  return { dir, file, live, applied, lines, clock, reloader };
}

const withAllowlist = (allowlist: string[]) => JSON.stringify({ ...START, tools: { exec: { allowlist } } });

describe("ConfigReloader.reload", () => {
  it("a changed file is applied and one line names the changed paths (never a value)", async () => {
    const s = setup();
    fs.writeFileSync(s.file, withAllowlist(["echo *", "date *"]));
    const outcome = await s.reloader.reload("test");
    expect(outcome).toMatchObject({ status: "applied", change: { applied: ["tools.exec.allowlist"] } });
    expect(s.live.current.tools.exec.allowlist).toEqual(["echo *", "date *"]);
    expect(s.lines.filter((l) => l.message === "config reloaded")).toEqual([
      { level: "info", message: "config reloaded", fields: { reason: "test", changed: "tools.exec.allowlist" } },
    ]);
    // the same content again: nothing is read twice, nothing applied twice
    expect(await s.reloader.reload("test")).toMatchObject({ status: "unchanged" });
    expect(s.applied).toHaveLength(1);
  });

  it("an edit made while the gateway was starting (after its config was loaded) is applied by the first reload", async () => {
    const s = setup({ text: withAllowlist(["date *"]) });
    expect(await s.reloader.reload("SIGHUP")).toMatchObject({ status: "applied" });
    expect(s.live.current.tools.exec.allowlist).toEqual(["date *"]);
  });

  it("a bad file (JSON5 syntax, then a schema error, then a load-time check) is logged with its problems and the running config stays", async () => {
    const s = setup();
    const before = s.live.current;
    fs.writeFileSync(s.file, "{ tools: { exec: { allowlist: [ } }");
    const syntax = await s.reloader.reload("test");
    fs.writeFileSync(s.file, JSON.stringify({ ...START, tools: { exec: { ask: "sometimes" } } }));
    const schema = await s.reloader.reload("test");
    fs.writeFileSync(s.file, JSON.stringify({ ...START, agents: { defaults: { model: { primary: "nope/m" } } } }));
    const check = await s.reloader.reload("test");
    expect(syntax).toMatchObject({
      status: "invalid",
      problems: [expect.stringMatching(/^not valid JSON5 at line 1/)],
    });
    expect(schema).toMatchObject({ status: "invalid", problems: [expect.stringMatching(/^tools\.exec\.ask: /)] });
    expect(check).toMatchObject({
      status: "invalid",
      problems: [expect.stringMatching(/^agents\.defaults\.model\.primary: unknown provider "nope"/)],
    });
    expect(s.live.current).toBe(before);
    expect(s.applied).toEqual([]);
    const errors = s.lines.filter((l) => l.level === "error");
    expect(errors).toHaveLength(3);
    expect(errors[1].fields?.problems).toMatch(/^tools\.exec\.ask: /);
    expect(JSON.stringify(s.lines)).not.toContain(SECRET);
  });

  it("changed restart keys are named in one warning; the safe part beside them applies", async () => {
    const s = setup();
    fs.writeFileSync(
      s.file,
      JSON.stringify({
        ...START,
        gateway: { port: 1234, bind: "lan" },
        storage: { backend: "sqlite", quickCheckOnStart: false },
        tools: { exec: { allowlist: [] } },
      }),
    );
    await s.reloader.reload("test");
    const warnings = s.lines.filter((l) => l.level === "warn");
    expect(warnings.map((l) => l.message)).toEqual([
      "config: restart to apply: storage.quickCheckOnStart, gateway.port, gateway.bind",
    ]);
    expect(s.live.current.tools.exec.allowlist).toEqual([]);
    expect(s.live.current.gateway.port).toBe(18789);
  });

  it("a burst of writes is read once, after the file has been quiet for gateway.reload.debounceMs", async () => {
    const s = setup();
    s.reloader.start();
    let timersArmed = 0;
    const armed = () =>
      new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          if (s.clock.pendingTimers > 0) {
            clearInterval(poll);
            timersArmed++;
            resolve();
          }
        }, 5);
      });
    // an editor's save: a temp file renamed over the config (the folder is watched, so this is seen)
    for (const list of [["a *"], ["a *", "b *"], ["a *", "b *", "c *"]]) {
      const tmp = path.join(s.dir, ".loopgate.json5.swp");
      fs.writeFileSync(tmp, withAllowlist(list));
      fs.renameSync(tmp, s.file);
      await armed();
      s.clock.advance(100);
    }
    expect(timersArmed).toBe(3);
    expect(s.applied).toEqual([]);
    s.clock.advance(199);
    expect(s.applied).toEqual([]);
    s.clock.advance(1);
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (s.applied.length === 0) return;
        clearInterval(poll);
        resolve();
      }, 5);
    });
    expect(s.applied.map((c) => c.tools.exec.allowlist)).toEqual([["a *", "b *", "c *"]]);
  });

  it("mode off watches nothing: an edit is applied only by an explicit reload", async () => {
    const s = setup({ mode: "off" });
    s.reloader.start();
    fs.writeFileSync(s.file, withAllowlist(["date *"]));
    // a watcher would have armed its debounce timer by now; there is none
    await new Promise((r) => setTimeout(r, 100));
    expect(s.clock.pendingTimers).toBe(0);
    expect(s.live.current.tools.exec.allowlist).toEqual(["echo *"]);
    await s.reloader.reload("SIGHUP");
    expect(s.live.current.tools.exec.allowlist).toEqual(["date *"]);
  });
});

describe("ConfigReloader.write (config.patch, config.apply)", () => {
  it("a merge patch with the right base hash is written atomically with the file's mode, applied, and keeps a secret the client only saw redacted", async () => {
    const s = setup();
    const hash = s.reloader.currentHash();
    expect(hash).toBe(configHash(fs.readFileSync(s.file, "utf8")));
    // what a client sends back after config.get: the redacted provider, one change, and a key deleted (null)
    const shown = redactConfig(s.live.current).config as { models: { providers: Record<string, unknown> } };
    const patch = {
      models: { providers: shown.models.providers },
      tools: { exec: { allowlist: ["date *"] } },
      agents: null,
    };
    const written = await s.reloader.write({
      kind: "patch",
      raw: JSON.stringify(patch),
      baseHash: hash,
      replacePaths: ["tools.exec.allowlist"],
    });
    const onDisk = fs.readFileSync(s.file, "utf8");
    expect(written.hash).toBe(configHash(onDisk));
    expect(JSON.parse(onDisk).models.providers.p.apiKey).toBe(SECRET);
    expect(JSON.parse(onDisk).agents).toBeUndefined();
    expect(fs.statSync(s.file).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(s.dir)).toEqual(["loopgate.json5"]);
    expect(written.change.applied).toContain("tools.exec.allowlist");
    expect(s.live.current.tools.exec.allowlist).toEqual(["date *"]);
    expect(s.live.current.models.providers.p.apiKey).toBe(SECRET);
  });

  it("a stale or missing base hash is refused and the file is left as it was", async () => {
    const s = setup();
    const before = fs.readFileSync(s.file, "utf8");
    const stale = await s.reloader
      .write({ kind: "patch", raw: "{ tools: { exec: { ask: 'off' } } }", baseHash: configHash("older") })
      .catch((e: ConfigWriteError) => e);
    const missing = await s.reloader
      .write({ kind: "patch", raw: "{ tools: { exec: { ask: 'off' } } }" })
      .catch((e: ConfigWriteError) => e);
    expect(stale).toMatchObject({
      code: "conflict",
      message: expect.stringMatching(/^params\.baseHash: .*config\.get/),
    });
    expect(missing).toMatchObject({
      code: "invalid_params",
      message: expect.stringMatching(/^params\.baseHash: required/),
    });
    expect(fs.readFileSync(s.file, "utf8")).toBe(before);
  });

  it("an invalid patch changes nothing and says which key is wrong: bad JSON5, a schema error, a marker with no secret behind it, a list shortened without replacePaths", async () => {
    const s = setup();
    const before = fs.readFileSync(s.file, "utf8");
    const baseHash = s.reloader.currentHash();
    const attempt = (raw: string) =>
      s.reloader.write({ kind: "patch", raw, baseHash }).catch((e: ConfigWriteError) => `${e.code}: ${e.message}`);
    expect(await attempt("{ tools: ")).toMatch(/^invalid_params: params\.raw: not valid JSON5 at line 1/);
    expect(await attempt("{ tools: { exec: { ask: 'sometimes' } } }")).toMatch(/^invalid_params: .*tools\.exec\.ask: /);
    expect(await attempt('{ models: { providers: { p: { apiKey: "sk-[redacted]" } } } }')).toMatch(
      /^invalid_params: models\.providers\.p\.apiKey: holds "\[redacted\]"/,
    );
    expect(await attempt('{ tools: { exec: { allowlist: ["date *"] } } }')).toMatch(
      /^invalid_params: params\.raw: replaces tools\.exec\.allowlist .*replacePaths/,
    );
    expect(fs.readFileSync(s.file, "utf8")).toBe(before);
    expect(s.applied).toEqual([]);
  });

  it("a patch can set a new secret, and config.apply replaces the whole file", async () => {
    const s = setup();
    await s.reloader.write({
      kind: "patch",
      raw: '{ models: { providers: { p: { apiKey: "sk-new-456" } } } }',
      baseHash: s.reloader.currentHash(),
    });
    expect(s.live.current.models.providers.p.apiKey).toBe("sk-new-456");
    const whole = {
      ...START,
      models: { providers: { p: { ...START.models.providers.p, apiKey: "[redacted]" } } },
      tools: {},
    };
    await s.reloader.write({ kind: "replace", raw: JSON.stringify(whole), baseHash: s.reloader.currentHash() });
    const onDisk = JSON.parse(fs.readFileSync(s.file, "utf8"));
    expect(onDisk.tools).toEqual({});
    expect(onDisk.models.providers.p.apiKey).toBe("sk-new-456");
    expect(s.live.current.tools.exec.allowlist).toEqual([]);
  });
});
