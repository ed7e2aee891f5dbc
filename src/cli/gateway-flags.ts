// The Node/V8 flags and the environment the long-running `loopgate gateway` process runs with, and the re-exec that
// applies them.
// Imported by every CLI run before anything else of ours, so nothing is imported here up front (the fallback's
// node:child_process only when it is used). The bench's gateway host (bench/metrics/gateway-host.mjs via
// bench/lib/gateway-metrics.mjs) starts with the same flags and environment, so the bench measures what users run.

/**
 * Why: under a burst of concurrent sessions V8 grows the young generation to its maximum (two 32 MB semi-spaces on a
 * machine with this much memory) and keeps it resident for the life of the process, ~50 MB of a gateway's RSS after
 * 1,000 turns over 100 sessions with no live data in it. Capping a semi-space at 4 MB takes ~45 MB off with no
 * measurable CPU cost per turn (bench/README.md, "gateway RSS: the young generation capped"; 2 MB cost CPU, 8 MB
 * saved less). V8 reads this flag only at start (v8.setFlagsFromString afterwards has no effect on Node 24), hence
 * the re-exec below.
 */
export const GATEWAY_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=4"];

/**
 * Environment the gateway process starts with. glibc gives each thread that mallocs under contention an arena of its
 * own (libuv's pool, V8's workers: 6 on the bench) and keeps what each grew to; two arenas took another ~6 MB off
 * after the same turns (same bench section), again at no measurable CPU cost. Read by glibc once, at process start, so
 * it is set for the re-exec and removed again from the gateway's environment once it runs, so that the
 * commands, MCP servers and sandboxes the gateway starts do not inherit it.
 */
export const GATEWAY_NODE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };

/** Names of the GATEWAY_NODE_ENV variables the re-exec added (not the user's), for the new process to remove. */
const ADDED_ENV = "LOOPGATE_REEXEC_ADDED_ENV";

/** Set to 1 to run `loopgate gateway` in the process it was started in, with Node's defaults. */
export const NO_REEXEC_ENV = "LOOPGATE_NO_REEXEC";

/** A flag's name as V8 and Node compare them: no dashes in front, `_` same as `-`, no `no-` prefix, no value. */
function flagName(arg: string): string {
  const name = arg.replace(/^-+/, "").split("=")[0]?.replace(/_/g, "-") ?? "";
  return name.startsWith("no-") ? name.slice(3) : name;
}

/** NODE_OPTIONS split into its arguments (Node's own rule: spaces separate, double quotes group). */
function splitNodeOptions(value: string | undefined): string[] {
  return value?.match(/(?:[^\s"]+|"[^"]*")+/g)?.map((a) => a.replace(/"/g, "")) ?? [];
}

/**
 * The flags of GATEWAY_NODE_FLAGS this process does not run with, leaving out any the user set themselves (on the
 * node command line or in NODE_OPTIONS, to any value: a user's `--max-semi-space-size=16` wins).
 */
export function missingGatewayFlags(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): string[] {
  const set = new Set([...execArgv, ...splitNodeOptions(nodeOptions)].map(flagName));
  return GATEWAY_NODE_FLAGS.filter((f) => !set.has(flagName(f)));
}

/** Whether argv (process.argv) runs the gateway itself, not its --help. */
export function isGatewayCommand(argv: readonly string[]): boolean {
  const args = argv.slice(2);
  return args[0] === "gateway" && !args.includes("--help") && !args.includes("-h");
}

/**
 * For `loopgate gateway` only: starts this same command again under the gateway's Node flags and environment when
 * some are missing (and the user did not opt out). With process.execve (Node >= 22.15 / 23.11) the process replaces itself: same pid,
 * so supervisors, signals and the exit code are untouched. Older Node gets a child with the terminal inherited: it
 * runs in its own process group so that a Ctrl-C reaches it once, through this process, which forwards
 * SIGINT/SIGTERM/SIGHUP and exits with the child's code. Returns false when nothing was done (the caller goes on).
 */
export async function reexecWithGatewayFlags(): Promise<boolean> {
  // the process the re-exec started: glibc has read its settings; what was added for it goes, and it never re-execs
  const added = process.env[ADDED_ENV];
  if (added !== undefined) {
    for (const name of added.split(",")) if (name) delete process.env[name];
    delete process.env[ADDED_ENV];
    return false;
  }
  if (!isGatewayCommand(process.argv) || process.env[NO_REEXEC_ENV] === "1") return false;
  const flags = missingGatewayFlags();
  // a variable the user set, to any value, is theirs
  const envNames = Object.keys(GATEWAY_NODE_ENV).filter((name) => process.env[name] === undefined);
  if (flags.length === 0 && envNames.length === 0) return false;
  const args = [...flags, ...process.execArgv, ...process.argv.slice(1)];
  const env: NodeJS.ProcessEnv = { ...process.env, [ADDED_ENV]: envNames.join(",") };
  for (const name of envNames) env[name] = GATEWAY_NODE_ENV[name];
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
  if (typeof execve === "function") {
    try {
      execve.call(process, process.execPath, [process.execPath, ...args], env);
    } catch {
      // execve failed (not allowed here, say): run on in this process with Node's defaults rather than not at all
      return false;
    }
  }
  const [{ spawn }, { constants }] = await Promise.all([import("node:child_process"), import("node:os")]);
  const child = spawn(process.execPath, args, { stdio: "inherit", detached: true, env });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
  child.on("error", (err) => {
    process.stderr.write(`loopgate: cannot start the gateway process: ${err.message}\n`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    // a child ended by a signal reports as a shell would (128 + its number)
    const signo = signal ? constants.signals[signal] : 0;
    process.exit(code ?? 128 + signo);
  });
  return true;
}
