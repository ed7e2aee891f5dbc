import fs from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";

/*
 * `.env` files, read as OpenClaw reads them: the current directory's, then the state dir's; a variable already set
 * (in the environment, or by the first file) is never overridden. Dependency-free and zod-free: the CLI entry reads
 * them before anything else, so a provider key or LOOPGATE_STATE_DIR from a `.env` counts everywhere.
 * Only names are ever reported; values stay out of logs.
 */

export interface DotEnvFile {
  file: string;
  /** variables this file set (names only) */
  applied: string[];
}

/** Reads `<cwd>/.env`, then `<stateDir>/.env` (the state dir as the first file may have changed it). */
export function loadDotEnvFiles(
  env: NodeJS.ProcessEnv,
  cwd: string,
  stateDirOf: (env: NodeJS.ProcessEnv) => string,
): DotEnvFile[] {
  const read: DotEnvFile[] = [];
  const seen = new Set<string>();
  for (const dir of [() => cwd, () => stateDirOf(env)]) {
    const file = path.join(dir(), ".env");
    if (seen.has(file)) continue;
    seen.add(file);
    const applied = applyDotEnvFile(env, file);
    if (applied) read.push({ file, applied });
  }
  return read;
}

/** Sets the file's variables that `env` lacks; undefined when there is no such file. */
export function applyDotEnvFile(env: NodeJS.ProcessEnv, file: string): string[] | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    // no file (or an unreadable one): nothing to add, as when there is none
    return undefined;
  }
  const applied: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] !== undefined) continue;
    env[name] = value;
    applied.push(name);
  }
  return applied;
}
