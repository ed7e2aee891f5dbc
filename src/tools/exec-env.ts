/**
 * The exec child's environment. It never inherits the process's own: the gateway's environment holds provider keys
 * and tokens, and a command the model wrote must not be able to print them. The child gets the few variables a
 * shell needs, the names listed in `tools.exec.env`, and what the run injects (skills' env, `ToolContext.env`).
 */

/** Passed through from the parent when set: what a shell and ordinary tools need to work. */
export const EXEC_BASE_ENV = ["PATH", "HOME", "LANG", "TERM"] as const;

/** Used when the parent has no PATH at all, so `sh -c ls` still finds `ls`. */
const FALLBACK_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export function execChildEnv(
  parent: NodeJS.ProcessEnv,
  passthrough: readonly string[],
  injected: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...EXEC_BASE_ENV, ...passthrough]) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= FALLBACK_PATH;
  return { ...env, ...injected };
}
