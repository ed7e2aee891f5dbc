#!/usr/bin/env node
// This entry must stay loadable by any Node: nothing is imported statically (ESM hoists static imports, so anything
// imported here would load before the check below). Older Node (20) crashed inside a dependency with exit 139 and no
// message; the check turns that into one line and exit 1.

/** The oldest Node the CLI runs on; keep in step with package.json engines. */
const MIN_NODE = [22, 12] as const;

function nodeIsTooOld(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1]);
}

if (nodeIsTooOld(process.versions.node)) {
  process.stderr.write(`loopgate needs Node.js >= ${MIN_NODE.join(".")} (this is ${process.version})\n`);
  process.exit(1);
}

// the built-ins come from getBuiltinModule, which every Node past the check has (an older one lacks it): an ES
// import would build each module's facade, running their lazy getters (scripts/builtin-imports.mjs says which)
const fs = process.getBuiltinModule("node:fs");
const module = process.getBuiltinModule("node:module");
const path = process.getBuiltinModule("node:path");

// `.env` files (the current directory's, then the state dir's) fill in variables the environment lacks, as
// OpenClaw's do; read first, so a LOOPGATE_STATE_DIR or provider key set there counts for everything below
// (imported here, after the version check: a static import is evaluated before any line of this module runs)
const { loadDotEnvFiles } = await import("../config/dotenv.js");
const { resolveStateDir } = await import("../config/state-dir.js");
try {
  loadDotEnvFiles(process.env, process.cwd(), resolveStateDir);
} catch (err) {
  process.stderr.write(`loopgate: cannot read a .env file: ${(err as Error).message}\n`);
}

// `loopgate gateway` is the one long-running command: it runs under Node flags that bound its memory
// (gateway-flags.ts says which and why), starting itself again with them when they are missing. Done after the .env
// files (a LOOPGATE_NO_REEXEC or NODE_OPTIONS there counts) and before anything else is loaded, which would be loaded twice.
const { reexecWithGatewayFlags } = await import("./gateway-flags.js");
if (await reexecWithGatewayFlags()) {
  // older Node: a child process runs the gateway; this one only waits for it and forwards signals
  await new Promise(() => {});
}

// Every CLI run is a fresh process, and compiling our modules and their dependencies was most of a one-shot run's
// start. Node's on-disk compile cache (22.1+) keeps V8's code cache between runs, so every run after the first skips
// compiling. It must be enabled before the program's modules are imported, hence the dynamic imports below. A cache
// that cannot be written (read-only home, full disk) only costs speed: the status is ignored.
try {
  const stateDir = resolveStateDir();
  // made here, 0700, before Node's cache makes it with the umask's mode: transcripts and keys end up inside
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  module.enableCompileCache?.(path.join(stateDir, "cache", "compile"));
} catch {
  // never let a cache problem stop the CLI
}
await import("./program.js");
