import os from "node:os";
import path from "node:path";

/** Where Loopgate keeps its state. Dependency-free, so the CLI entry can use it before anything else is loaded. */
export function resolveStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env.LOOPGATE_STATE_DIR?.trim();
  return raw ? path.resolve(expandHome(raw)) : path.join(os.homedir(), ".loopgate");
}

export function expandHome(p: string): string {
  return p === "~" || p.startsWith("~/") ? path.join(os.homedir(), p.slice(1)) : p;
}
