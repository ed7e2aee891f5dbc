import type { z } from "zod";
import { finishAndCheck } from "./check.js";
import { ConfigError } from "./errors.js";
import { configSchema, type LoopgateConfig } from "./schema.js";
import { readConfigSource } from "./source.js";
import { unsupportedKeyProblems } from "./unsupported.js";

export { expandHome, resolveStateDir, withEnvProviders } from "./source.js";

export { ConfigError };

export interface LoadedConfig {
  config: LoopgateConfig;
  /** the file the config came from, if any */
  file?: string;
  stateDir: string;
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
export function validateConfig(raw: unknown): { config?: LoopgateConfig; problems: string[] } {
  const result = configSchema.safeParse(raw ?? {});
  const problems = [...(result.success ? [] : formatZodIssues(result.error)), ...unsupportedKeyProblems(raw)];
  return { config: result.success ? result.data : undefined, problems };
}

export function parseConfig(raw: unknown, file?: string): LoopgateConfig {
  const { config, problems } = validateConfig(raw);
  if (!config || problems.length > 0) throw new ConfigError(problems, file);
  return config;
}

export { resolveSecretRef } from "./secret-ref.js";

/**
 * Config file precedence: explicit path (--config) > LOOPGATE_CONFIG > $LOOPGATE_STATE_DIR/loopgate.json5.
 * An explicit path that does not exist is an error; the default path may be absent (defaults apply).
 */
export function loadConfig(opts: { configPath?: string; env?: NodeJS.ProcessEnv } = {}): LoadedConfig {
  const env = opts.env ?? process.env;
  const source = readConfigSource({ configPath: opts.configPath, env });
  const { config, problems } = validateConfig(source.raw ?? {});
  if (!config) throw new ConfigError(problems, source.file);
  return { config: finishAndCheck(config, source.file, env, problems), file: source.file, stateDir: source.stateDir };
}
