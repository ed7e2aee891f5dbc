/**
 * The built-ins that the modules imported through `importCompiledEagerly` load while they are evaluated. Each is loaded
 * before V8's `lazy` flag is turned off: V8 refuses a code cache made under other flags, so a built-in first loaded
 * inside the window would be compiled from its source (and whole) instead of from the cache Node ships for it.
 * test/e2e/cold-imports.test.ts checks that an `agent --local` turn loads no built-in inside the window.
 */
export const BUILTINS_LOADED_BEFORE_THE_WINDOW = [
  "node:crypto",
  "node:fs/promises",
  "node:readline",
  "node:readline/promises",
] as const;

/**
 * Runs `load` (dynamic imports of our own chunks) with V8 compiling every function of the modules it compiles, not
 * only their top level. Why: Node's compile cache (src/cli/main.ts) stores what V8 compiled when the module was
 * compiled. With lazy compilation that is the top level alone, so every one-shot process compiled again each
 * function its turn called (~900 of them for one `agent --local` turn, ~20 µs each). Compiled whole, they are in the
 * cache, and the next run reads them from it. The cache entries made this way are only accepted by a process that
 * compiles the same way (V8 checks its flags), which is every `agent --local` run; another command that loads the
 * same chunk lazily writes its entry again once. A node started with its own `--lazy`/`--no-lazy`, or a process
 * without a compile cache, is left alone.
 */
export async function importCompiledEagerly<T>(load: () => Promise<T>): Promise<T> {
  // without a compile cache (NODE_DISABLE_COMPILE_CACHE, a cache dir that cannot be written) every run would compile
  // whole modules for nothing kept: lazy compilation is cheaper then
  if (!process.getBuiltinModule("node:module").getCompileCacheDir?.()) return load();
  if (process.execArgv.some((a) => /^--(no[-_])?lazy$/.test(a))) return load();
  for (const name of BUILTINS_LOADED_BEFORE_THE_WINDOW) process.getBuiltinModule(name);
  // Node 22 loads its CommonJS export lexer (a built-in, internal/deps/cjs-module-lexer) the first time an ES module
  // imports a CommonJS package; better-sqlite3 is the one the turn imports, so it is imported before the window too
  // (it is not ours: compiled lazily, as before)
  await import("better-sqlite3");
  // loaded here, not at the top: `agent --url` shares this file's chunk and never comes here
  const v8 = process.getBuiltinModule("node:v8");
  v8.setFlagsFromString("--no-lazy");
  try {
    return await load();
  } finally {
    v8.setFlagsFromString("--lazy");
  }
}
