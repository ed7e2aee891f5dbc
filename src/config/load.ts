import type { z } from "zod";
import { finishAndCheck } from "./check.js";
import { ConfigError } from "./errors.js";
import { applyConfigEnv, stripOpenClawOnlyKeys, warnOpenClawOnly } from "./openclaw-only.js";
import { configSchema, type LoopgateConfig } from "./schema.js";
import { parseConfigText, readConfigSource } from "./source.js";
import { unsupportedKeyProblems } from "./unsupported.js";

export { expandHome, resolveStateDir, withEnvProviders } from "./source.js";

export { ConfigError };

export interface LoadedConfig {
  config: LoopgateConfig;
  /** the file the config came from, if any */
  file?: string;
  stateDir: string;
  /** the one "not supported by Loopgate" warning, when the file sets OpenClaw keys Loopgate ignores */
  warning?: string;
}

export interface LoadOptions {
  configPath?: string;
  env?: NodeJS.ProcessEnv;
  /** where the "not supported by Loopgate" warning goes; default: stderr, once per process and file */
  onWarning?: (message: string) => void;
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

/**
 * The schema's verdict plus unsupported keys that are set. `config` is there whenever the schema accepted the file,
 * so loading can go on to its own checks and report everything at once.
 */
export function validateConfig(raw: unknown): { config?: LoopgateConfig; problems: string[]; ignored: string[] } {
  // OpenClaw keys Loopgate has nothing for are taken out first, and named in the load warning (openclaw-only.ts)
  const stripped = stripOpenClawOnlyKeys(raw ?? {});
  const result = configSchema.safeParse(stripped.raw);
  const problems = [...(result.success ? [] : formatZodIssues(result.error)), ...unsupportedKeyProblems(raw)];
  return { config: result.success ? result.data : undefined, problems, ignored: stripped.ignored };
}

/** A config object (not a file) validated; OpenClaw-only keys in it are warned about as a file's are. */
export function parseConfig(raw: unknown, file?: string, onWarning?: (message: string) => void): LoopgateConfig {
  const { config, problems, ignored } = validateConfig(raw);
  if (!config || problems.length > 0) throw new ConfigError(problems, file);
  warnOpenClawOnly(file, ignored, onWarning);
  return config;
}

export { resolveSecretRef } from "./secret-ref.js";

/**
 * Config file precedence: --config > LOOPGATE_CONFIG_PATH > LOOPGATE_CONFIG > $LOOPGATE_STATE_DIR/loopgate.json5.
 * An explicit path that does not exist is an error; the default path may be absent (defaults apply).
 */
export function loadConfig(opts: LoadOptions = {}): LoadedConfig {
  const env = opts.env ?? process.env;
  const source = readConfigSource({ configPath: opts.configPath, env });
  const { config, problems, ignored } = validateConfig(source.raw ?? {});
  if (!config) throw new ConfigError(problems, source.file);
  applyConfigEnv(source.raw, env);
  const finished = finishAndCheck(config, source.file, env, problems);
  const warning = warnOpenClawOnly(source.file, ignored, opts.onWarning);
  return { config: finished, file: source.file, stateDir: source.stateDir, ...(warning ? { warning } : {}) };
}

/**
 * A config file's text loaded as the start loads the file (JSON5, schema, the `env` block, paths relative to `file`,
 * the load-time checks): the live reload and config.patch validate a candidate with it. `env` receives the `env`
 * block's missing variables, as at start: pass a copy to only validate.
 */
export function loadConfigText(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv,
  onWarning?: (message: string) => void,
): LoopgateConfig {
  const raw = parseConfigText(text, file);
  const { config, problems, ignored } = validateConfig(raw);
  if (!config) throw new ConfigError(problems, file);
  applyConfigEnv(raw, env);
  const finished = finishAndCheck(config, file, env, problems);
  warnOpenClawOnly(file, ignored, onWarning);
  return finished;
}
