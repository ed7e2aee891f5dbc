import fs from "node:fs";
import path from "node:path";
import { ConfigError } from "./errors.js";
import { parseJson5Text } from "./json5-text.js";
import type { LoopgateConfig } from "./schema.js";
import { expandHome, resolveStateDir } from "./state-dir.js";

/*
 * The parts of loading a config that need no schema: finding and reading the file, and what is done to the validated
 * config afterwards. Kept free of zod so the config cache (cached.ts) can skip loading the schema entirely.
 */

export interface ConfigSource {
  /** the parsed JSON5 object, or undefined when the default file does not exist */
  raw?: Record<string, unknown>;
  /** the file it came from; undefined when none exists */
  file?: string;
  /** its text, for cache keys */
  text?: string;
  stateDir: string;
}

export { expandHome, resolveStateDir } from "./state-dir.js";

export interface ConfigLocation {
  file: string;
  /** where the path came from */
  from: "--config" | ConfigPathVariable | "default";
  /** named by --config or one of the variables: then it must exist */
  explicit: boolean;
  stateDir: string;
}

/** LOOPGATE_CONFIG_PATH is OpenClaw's OPENCLAW_CONFIG_PATH under our prefix; LOOPGATE_CONFIG is the older name. */
export const configPathVariables = ["LOOPGATE_CONFIG_PATH", "LOOPGATE_CONFIG"] as const;
type ConfigPathVariable = (typeof configPathVariables)[number];

/**
 * Config file precedence: explicit path (--config) > LOOPGATE_CONFIG_PATH > LOOPGATE_CONFIG >
 * $LOOPGATE_STATE_DIR/loopgate.json5.
 */
export function locateConfigFile(opts: { configPath?: string; env?: NodeJS.ProcessEnv } = {}): ConfigLocation {
  const env = opts.env ?? process.env;
  const stateDir = resolveStateDir(env);
  if (opts.configPath !== undefined) {
    return { file: path.resolve(expandHome(opts.configPath)), from: "--config", explicit: true, stateDir };
  }
  for (const name of configPathVariables) {
    const value = env[name]?.trim();
    if (value) return { file: path.resolve(expandHome(value)), from: name, explicit: true, stateDir };
  }
  return { file: path.join(stateDir, "loopgate.json5"), from: "default", explicit: false, stateDir };
}

/**
 * The largest config file read. A config is a few kilobytes; JSON5 parsing costs about 0.2 s and 34 MB per MB of
 * text, so a 100 MB file (a log written to the wrong name, say) took 20 s and 3.4 GB before it was refused anyway.
 */
export const CONFIG_MAX_BYTES = 1024 * 1024;

/**
 * The file's text, read only up to the cap: what lies beyond it is never read, so a huge file (or an endless one,
 * like a device) costs no more than the cap. Over it is a ConfigError naming both sizes.
 */
export function readConfigText(file: string): string {
  const fd = fs.openSync(file, "r");
  try {
    const buf = Buffer.allocUnsafe(CONFIG_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, length, buf.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > CONFIG_MAX_BYTES) {
        const size = fs.fstatSync(fd).size;
        const over = size > CONFIG_MAX_BYTES ? `${size} bytes` : "more than that";
        throw new ConfigError(
          [`(file): ${over}; a config file may be at most ${CONFIG_MAX_BYTES} bytes (1 MiB): is this the right file?`],
          file,
        );
      }
    }
    return buf.toString("utf8", 0, length);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Reads the file `locateConfigFile` names. An explicit path that does not exist is an error; the default path may
 * be absent (defaults apply).
 */
export function readConfigSource(opts: { configPath?: string; env?: NodeJS.ProcessEnv } = {}): ConfigSource {
  const { file, explicit, stateDir } = locateConfigFile(opts);
  let text: string;
  try {
    text = readConfigText(file);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && !explicit) return { stateDir };
    throw new ConfigError([code === "ENOENT" ? "file not found" : `cannot read: ${(err as Error).message}`], file);
  }
  return { raw: parseConfigText(text, file), file, text, stateDir };
}

/** A config file's text as its object; not JSON5, or not an object, is a ConfigError saying where. */
export function parseConfigText(text: string, file: string | undefined): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = parseJson5Text(text);
  } catch (err) {
    const e = err as Error & { lineNumber?: number; columnNumber?: number };
    const where = e.lineNumber ? ` at line ${e.lineNumber}, column ${e.columnNumber}` : "";
    throw new ConfigError([`not valid JSON5${where}: ${e.message.replace(/^JSON5: /, "")}`], file);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(["(root): expected an object"], file);
  }
  return raw as Record<string, unknown>;
}

/** What follows validation: paths made absolute relative to the file, env-only providers added. */
export function finishConfig(config: LoopgateConfig, file: string | undefined, env: NodeJS.ProcessEnv): LoopgateConfig {
  if (file) resolveRelativePaths(config, path.dirname(file));
  return withEnvProviders(config, env);
}

/** Paths in the config are relative to the config file, not to wherever the CLI was started. */
function resolveRelativePaths(config: LoopgateConfig, baseDir: string): void {
  const abs = (p: string) => (path.isAbsolute(p) || p.startsWith("~") ? expandHome(p) : path.resolve(baseDir, p));
  for (const provider of Object.values(config.models.providers)) {
    if (provider.script) provider.script = abs(provider.script);
  }
  config.skills.dirs = config.skills.dirs.map(abs);
  config.hooks.dirs = config.hooks.dirs.map(abs);
  config.plugins.load.paths = config.plugins.load.paths.map(abs);
  for (const entry of config.hooks.internal) entry.module = abs(entry.module);
  if (config.agents.defaults.workspace) config.agents.defaults.workspace = abs(config.agents.defaults.workspace);
  for (const agent of config.agents.list) if (agent.workspace) agent.workspace = abs(agent.workspace);
  for (const server of Object.values(config.mcp.servers)) if (server.cwd) server.cwd = abs(server.cwd);
  for (const profile of Object.values(config.auth.profiles)) {
    if (profile.keyRef?.source === "file") profile.keyRef.path = abs(profile.keyRef.path);
  }
}

/** With no provider configured under those ids, `openai` / `anthropic` exist when their API key env var is set. */
export function withEnvProviders(config: LoopgateConfig, env: NodeJS.ProcessEnv): LoopgateConfig {
  const providers = config.models.providers;
  if (config.models.mode === "replace") return config;
  if (!providers.openai && env.OPENAI_API_KEY) {
    providers.openai = {
      api: "openai-completions",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an env reference, resolved at first use
      apiKey: "${OPENAI_API_KEY}",
      baseUrl: env.OPENAI_BASE_URL || undefined,
      models: [{ id: "gpt-4o-mini", contextWindow: 128000, maxTokens: 16384 }],
    };
  }
  if (!providers.anthropic && env.ANTHROPIC_API_KEY) {
    providers.anthropic = {
      api: "anthropic-messages",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an env reference, resolved at first use
      apiKey: "${ANTHROPIC_API_KEY}",
      baseUrl: env.ANTHROPIC_BASE_URL || undefined,
      models: [{ id: "claude-sonnet-4-5", contextWindow: 200000, maxTokens: 8192 }],
    };
  }
  if (!config.agents.defaults.model.primary) {
    if (providers.openai && env.OPENAI_API_KEY) config.agents.defaults.model.primary = "openai/gpt-4o-mini";
    else if (providers.anthropic && env.ANTHROPIC_API_KEY)
      config.agents.defaults.model.primary = "anthropic/claude-sonnet-4-5";
  }
  return config;
}
