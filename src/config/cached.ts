import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { finishAndCheck } from "./check.js";
import type { LoadedConfig, LoadOptions } from "./load.js";
import { applyConfigEnv, openclawOnlyKeys, stripOpenClawOnlyKeys, warnOpenClawOnly } from "./openclaw-only.js";
import type { LoopgateConfig } from "./schema.js";
import { readConfigSource } from "./source.js";
import { unsupportedKeys } from "./unsupported.js";

/**
 * Config loading for one-shot CLI processes. Importing and building the schema (zod) costs 100–200 ms of a cold start
 * — more than the turn itself — while the config file rarely changes. The validated config is therefore kept in
 * `<stateDir>/cache/`, keyed by the file's exact text, its path, the schema module (so a changed schema
 * invalidates it) and the CPU count (a default depends on it). On a hit the schema is never loaded; on a miss,
 * or when the cache cannot be read or written, the file is validated as always. Env- and disk-dependent steps
 * (env-only providers, the load-time checks) run after the cache, every time; a file that fails them is not cached.
 */
export async function loadConfigCached(opts: LoadOptions = {}): Promise<LoadedConfig> {
  const env = opts.env ?? process.env;
  const source = readConfigSource({ configPath: opts.configPath, env });
  const key = cacheKey(source.file, source.text);
  const cacheFile = key ? path.join(source.stateDir, "cache", `config-${key}.json`) : undefined;
  let config: LoopgateConfig | undefined;
  if (cacheFile) {
    try {
      config = JSON.parse(fs.readFileSync(cacheFile, "utf8")) as LoopgateConfig;
    } catch {
      config = undefined;
    }
  }
  // the ignored OpenClaw keys are found without the schema, so a cache hit warns exactly as a miss does
  const loaded = (finished: LoopgateConfig): LoadedConfig => {
    const warning = warnOpenClawOnly(source.file, stripOpenClawOnlyKeys(source.raw ?? {}).ignored, opts.onWarning);
    return { config: finished, file: source.file, stateDir: source.stateDir, ...(warning ? { warning } : {}) };
  };
  // OpenClaw's `env` block fills in missing variables before the checks look at `${NAME}` references
  applyConfigEnv(source.raw, env);
  if (config) return loaded(finishAndCheck(config, source.file, env));
  const { validateConfig, ConfigError } = await import("./load.js");
  const { config: parsed, problems } = validateConfig(source.raw ?? {});
  if (!parsed) throw new ConfigError(problems, source.file);
  // serialized before finishing: the cache holds the file's config, not this environment's additions
  const text = JSON.stringify(parsed);
  const finished = finishAndCheck(parsed, source.file, env, problems);
  if (cacheFile) writeCache(cacheFile, text);
  return loaded(finished);
}

let schemaStamp: string | undefined;

function cacheKey(file: string | undefined, text: string | undefined): string | undefined {
  if (schemaStamp === undefined) {
    // the compiled schema module, or its source when running from TypeScript (tests). Named through ../config/:
    // this code also runs from the bundled bin's chunks in dist/cli/, where ./schema.js would not exist and every
    // run would miss the cache; the build writes dist/config/schema.js and the bin's chunks together
    const st =
      fs.statSync(new URL("../config/schema.js", import.meta.url), { throwIfNoEntry: false }) ??
      fs.statSync(new URL("../config/schema.ts", import.meta.url), { throwIfNoEntry: false });
    if (!st) return undefined;
    schemaStamp = `${st.mtimeMs}:${st.size}`;
  }
  // the unsupported-key list is part of what "valid" means, like the schema
  const unsupported = [...unsupportedKeys.map((k) => k.path), "|", ...openclawOnlyKeys].join(",");
  return createHash("sha256")
    .update(`${schemaStamp}\0${unsupported}\0${os.cpus().length}\0${file ?? "(none)"}\0${text ?? ""}`)
    .digest("hex")
    .slice(0, 32);
}

function writeCache(cacheFile: string, text: string): void {
  try {
    // the cached config may hold provider keys: the state dir and the cache are the owner's alone
    fs.mkdirSync(path.dirname(cacheFile), { recursive: true, mode: 0o700 });
    const tmp = `${cacheFile}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text, { mode: 0o600 });
    fs.renameSync(tmp, cacheFile);
    // keep the few newest entries (one per config text seen): editing the config must not grow the folder
    const dir = path.dirname(cacheFile);
    const entries = fs
      .readdirSync(dir)
      .filter((n) => n.startsWith("config-") && n.endsWith(".json"))
      .map((n) => ({ n, t: fs.statSync(path.join(dir, n)).mtimeMs }))
      .sort((a, b) => b.t - a.t);
    for (const e of entries.slice(8)) fs.rmSync(path.join(dir, e.n), { force: true });
  } catch {
    // a read-only state dir just means no cache: the config was validated anyway
  }
}
