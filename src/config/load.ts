import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import JSON5 from "json5";
import type { z } from "zod";
import { ConfigError } from "./errors.js";
import { configSchema, type LoopgateConfig } from "./schema.js";

export { ConfigError };

export interface LoadedConfig {
  config: LoopgateConfig;
  /** the file the config came from, if any */
  file?: string;
  stateDir: string;
}

export function resolveStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env.LOOPGATE_STATE_DIR?.trim();
  return raw ? path.resolve(expandHome(raw)) : path.join(os.homedir(), ".loopgate");
}

export function expandHome(p: string): string {
  return p === "~" || p.startsWith("~/") ? path.join(os.homedir(), p.slice(1)) : p;
}

/** "a.b[0].c: message" — the form every config problem is reported in. */
export function formatIssuePath(pathParts: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const part of pathParts) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || "(root)";
}

export function formatZodIssues(error: z.ZodError): string[] {
  const problems: string[] = [];
  for (const issue of error.issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        problems.push(`${formatIssuePath([...issue.path, key])}: unknown key`);
      }
      continue;
    }
    problems.push(`${formatIssuePath(issue.path)}: ${issue.message}`);
  }
  return problems;
}

export function parseConfig(raw: unknown, file?: string): LoopgateConfig {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) throw new ConfigError(formatZodIssues(result.error), file);
  return result.data;
}

/**
 * Config file precedence: explicit path (--config) > LOOPGATE_CONFIG > $LOOPGATE_STATE_DIR/loopgate.json5.
 * An explicit path that does not exist is an error; the default path may be absent (defaults apply).
 */
export function loadConfig(opts: { configPath?: string; env?: NodeJS.ProcessEnv } = {}): LoadedConfig {
  const env = opts.env ?? process.env;
  const stateDir = resolveStateDir(env);
  const explicit = opts.configPath ?? env.LOOPGATE_CONFIG?.trim();
  const file = explicit ? path.resolve(expandHome(explicit)) : path.join(stateDir, "loopgate.json5");
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && !explicit) return { config: withEnvProviders(parseConfig({}), env), stateDir };
    throw new ConfigError([code === "ENOENT" ? "file not found" : `cannot read: ${(err as Error).message}`], file);
  }
  let raw: unknown;
  try {
    raw = JSON5.parse(text);
  } catch (err) {
    const e = err as Error & { lineNumber?: number; columnNumber?: number };
    const where = e.lineNumber ? ` at line ${e.lineNumber}, column ${e.columnNumber}` : "";
    throw new ConfigError([`not valid JSON5${where}: ${e.message.replace(/^JSON5: /, "")}`], file);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new ConfigError(["(root): expected an object"], file);
  }
  const config = parseConfig(raw, file);
  resolveRelativePaths(config, path.dirname(file));
  return { config: withEnvProviders(config, env), file, stateDir };
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
}

/** With no provider configured under those ids, `openai` / `anthropic` exist when their API key env var is set. */
export function withEnvProviders(config: LoopgateConfig, env: NodeJS.ProcessEnv): LoopgateConfig {
  const providers = config.models.providers;
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

export { resolveSecretRef } from "./secret-ref.js";
