// Rewrites the bundled bin's static imports of node: built-ins into process.getBuiltinModule() calls (used by
// scripts/bundle-cli.mjs on its output). Why: an ES import of a built-in builds the module's ES facade, which reads
// every export once, and reading them runs the built-in's lazy getters: `node:fs` loads its streams, `node:util` its
// diff, colors, parseArgs and worker_threads, `node:crypto` its webcrypto. A one-shot `agent --local` paid ~20 ms of
// loading for exports it never reads (bench/README.md, "cold CLI: built-ins without their ES facade").
// getBuiltinModule returns the same object `require` does, so each name is read when the code reads it, and only then.
//
// Only whole lines `import <clause> from "node:<name>";` are rewritten, each into one line: the chunk keeps its line
// count, so its source map still maps every other line. A clause this file does not know fails the build rather than
// passing through half-rewritten. Dynamic `import("node:...")` is left alone (it loads when the code reaches it).
const IMPORT_LINE = /^import (.+) from "(node:[a-z_/]+)";$/gm;
const IDENT = "[A-Za-z_$][A-Za-z0-9_$]*";
const DEFAULT_ONLY = new RegExp(`^${IDENT}$`);
const NAMESPACE = new RegExp(`^\\* as (${IDENT})$`);
const NAMED = new RegExp(`^\\{ (${IDENT}(?: as ${IDENT})?(?:, ${IDENT}(?: as ${IDENT})?)*) \\}$`);
const DEFAULT_AND_NAMED = new RegExp(`^(${IDENT}), (\\{ .+ \\})$`);

/** `a, b as c` -> `a, b: c`; a name `default` has no destructuring form and is refused. */
function destructure(list, line) {
  const parts = list.split(", ").map((p) => {
    const [name, alias] = p.split(" as ");
    if (name === "default") throw new Error(`builtin-imports: cannot rewrite ${line}`);
    return alias ? `${name}: ${alias}` : name;
  });
  return `{ ${parts.join(", ")} }`;
}

function rewriteClause(clause, specifier, line) {
  // through globalThis: a chunk may bind its own `process` (`import process from "node:process"`)
  const load = `globalThis.process.getBuiltinModule(${JSON.stringify(specifier)})`;
  if (DEFAULT_ONLY.test(clause)) return `const ${clause} = ${load};`;
  const ns = NAMESPACE.exec(clause);
  if (ns) return `const ${ns[1]} = ${load};`;
  const named = NAMED.exec(clause);
  if (named) return `const ${destructure(named[1], line)} = ${load};`;
  const both = DEFAULT_AND_NAMED.exec(clause);
  if (both) {
    const inner = NAMED.exec(both[2]);
    if (inner) return `const ${both[1]} = ${load}, ${destructure(inner[1], line)} = ${both[1]};`;
  }
  throw new Error(`builtin-imports: cannot rewrite ${line}`);
}

/** The chunk's code with each static import of a node: built-in replaced by a getBuiltinModule line. */
export function rewriteBuiltinImports(code) {
  return code.replace(IMPORT_LINE, (line, clause, specifier) => rewriteClause(clause, specifier, line));
}
