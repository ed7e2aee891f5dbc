#!/usr/bin/env node
import fs from "node:fs";
import module from "node:module";
import path from "node:path";
import { loadDotEnvFiles } from "../config/dotenv.js";
import { resolveStateDir } from "../config/state-dir.js";

// `.env` files (the current directory's, then the state dir's) fill in variables the environment lacks, as
// OpenClaw's do; read first, so a LOOPGATE_STATE_DIR or provider key set there counts for everything below
try {
  loadDotEnvFiles(process.env, process.cwd(), resolveStateDir);
} catch (err) {
  process.stderr.write(`loopgate: cannot read a .env file: ${(err as Error).message}\n`);
}

// Every CLI run is a fresh process, and compiling our modules and their dependencies was most of a one-shot run's
// start. Node's on-disk compile cache (22.1+) keeps V8's code cache between runs, so every run after the first skips
// compiling. It must be enabled before the program's modules are imported, hence this small entry and the dynamic
// import below. A cache that cannot be written (read-only home, full disk) only costs speed: the status is ignored.
try {
  const stateDir = resolveStateDir();
  // made here, 0700, before Node's cache makes it with the umask's mode: transcripts and keys end up inside
  fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  module.enableCompileCache?.(path.join(stateDir, "cache", "compile"));
} catch {
  // never let a cache problem stop the CLI
}
await import("./program.js");
