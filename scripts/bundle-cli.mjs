// Bundles the `loopgate` bin (dist/cli/main.js, as tsc wrote it) into a few ES module files, run by `npm run build`
// after tsc. Why: a one-shot CLI process spent two thirds of its time loading ~316 of our own modules (resolving,
// reading and compiling each one; bench/README.md, "Issue 34: where the time goes"); one file per dynamic import
// boundary loads the same code with a fraction of the module loader's work.
//
// What stays as it was:
// - the library (dist/index.js and every other dist/ file tsc wrote): embedders and tests import those; only
//   dist/cli/main.js is replaced, and its chunks are added next to it as dist/cli/bin-*.js.
// - lazy imports: each `import()` in our code stays a separate chunk, loaded when the code reaches it.
// - packages from node_modules are external (native addons, the provider SDKs, OpenTelemetry, MCP, ws, ajv, ...),
//   except the small pure ES-module ones listed in BUNDLED, which the CLI loads on every run.
// Chunks sit in dist/cli/, one folder below dist/ like every module tsc wrote, so our `import.meta.url`-relative
// paths (../../package.json, ../console, ../config/schema.js) resolve the same from a chunk as from the module.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { rolldown } from "rolldown";
import { rewriteBuiltinImports } from "./builtin-imports.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const cliDir = path.join(root, "dist", "cli");
const entry = path.join(cliDir, "main.js");

/** Packages bundled into the bin: loaded by every CLI run, pure ES modules, no file paths of their own. */
const BUNDLED = ["commander", "zod"];

function isExternal(id) {
  if (id.startsWith(".") || path.isAbsolute(id)) return false;
  if (id.startsWith("node:")) return true;
  const name = id.startsWith("@") ? id.split("/").slice(0, 2).join("/") : id.split("/")[0];
  return !BUNDLED.includes(name);
}

// the input must be tsc's main.js: bundling the bundle again would wrap its chunks in new ones
if (fs.existsSync(path.join(cliDir, "bin-modules.json"))) {
  process.stderr.write("bundle-cli: dist/cli/main.js is already the bundle; run `npm run build`\n");
  process.exit(1);
}

// Reads each module with the source map tsc wrote next to it, so the bundle's maps lead back to src/*.ts (as tsc's
// own maps do) instead of to the dist/*.js files that were bundled
const tscMaps = {
  name: "tsc-source-maps",
  load(id) {
    if (!id.endsWith(".js") || !fs.existsSync(`${id}.map`)) return null;
    const code = fs.readFileSync(id, "utf8").replace(/\n\/\/# sourceMappingURL=\S*\s*$/, "\n");
    return { code, map: JSON.parse(fs.readFileSync(`${id}.map`, "utf8")) };
  },
};

// commander imports node:child_process at its top for one use: spawning an executable subcommand, which loopgate has
// none of. Loading child_process (and the dgram and net parts it needs) cost every CLI run ~2.5 ms, the one built-in
// `agent --url` loaded beyond what a bare ws client does; here the module is fetched on that spawn instead.
// Same line count, so commander's lines stay where they were; a commander whose import reads differently fails the
// build instead of quietly keeping the eager import.
const COMMANDER_CHILD_PROCESS = "import childProcess from 'node:child_process';";
const lazyChildProcess = {
  name: "commander-lazy-child-process",
  transform(code, id) {
    if (!/[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/.test(id)) return null;
    if (!code.includes(COMMANDER_CHILD_PROCESS)) throw new Error(`bundle-cli: ${id} no longer has "${COMMANDER_CHILD_PROCESS}"`);
    const lazy =
      "const childProcess = { spawn: (...args) => process.getBuiltinModule('node:child_process').spawn(...args) };";
    return { code: code.replace(COMMANDER_CHILD_PROCESS, lazy), map: null };
  },
};

const bundle = await rolldown({
  input: { main: entry },
  platform: "node",
  external: isExternal,
  plugins: [tscMaps, lazyChildProcess],
});
const { output } = await bundle.generate({
  dir: cliDir, // only to place the maps' relative paths; nothing is written until every file was generated
  format: "esm",
  entryFileNames: "main.js",
  chunkFileNames: "bin-[name]-[hash].js",
  sourcemap: true,
  // like tsc's maps, which name the sources without carrying them (src/ is not in the package)
  sourcemapExcludeSources: true,
});
await bundle.close();

// written only after the whole bundle was generated: a failed bundling leaves tsc's main.js in place
// the chunks' maps come as assets of the output; main.js.map replaces the one tsc wrote for its main.js
// the chunks' static imports of node: built-ins become getBuiltinModule calls (why: scripts/builtin-imports.mjs)
// except the entry: main.js must run on any Node up to its version check, and getBuiltinModule is newer than some
// (src/cli/main.ts loads its built-ins after the check instead)
const texts = output.map((file) =>
  file.type !== "chunk" ? file.source : file.isEntry ? file.code : rewriteBuiltinImports(file.code),
);
output.forEach((file, i) => {
  fs.writeFileSync(path.join(cliDir, file.fileName), texts[i]);
});

// which of our modules each file holds: test/e2e/cold-imports.test.ts checks what a run loaded through it
const manifest = Object.fromEntries(
  output
    .filter((f) => f.type === "chunk")
    .map((c) => [c.fileName, c.moduleIds.map((id) => path.relative(root, id).split(path.sep).join("/"))]),
);
fs.writeFileSync(path.join(cliDir, "bin-modules.json"), `${JSON.stringify(manifest, null, 1)}\n`);
// `npx loopgate` marks the bin executable once, when it links the package; a rebuilt main.js must carry the bit
fs.chmodSync(entry, 0o755);
const chunks = output.filter((f) => f.type === "chunk");
const modules = chunks.reduce((n, c) => n + c.moduleIds.length, 0);
process.stdout.write(`bundle-cli: dist/cli/main.js and ${chunks.length - 1} chunks, ${modules} modules\n`);
