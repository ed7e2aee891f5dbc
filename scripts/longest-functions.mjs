#!/usr/bin/env node
// Lists the longest functions (in lines, signature to closing brace) under the given folders, longest first:
//   node scripts/longest-functions.mjs src/agent src/queue [--top 10]
// Test files are left out. Used to keep functions short enough to read on one screen.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

const args = process.argv.slice(2);
const topAt = args.indexOf("--top");
const top = topAt >= 0 ? Number(args[topAt + 1]) : 10;
const roots = args.filter((a, i) => !a.startsWith("--") && i !== topAt + 1);

function files(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return p.endsWith(".ts") && !/\.test(-support)?\.ts$|test-helpers\.ts$/.test(p) ? [p] : [];
  });
}

const found = [];
for (const file of roots.flatMap(files)) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.end).line;
      const name = node.name?.getText() ?? (ts.isArrowFunction(node) ? "(arrow)" : "(anonymous)");
      found.push({ lines: end - start + 1, where: `${file}:${start + 1}`, name });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
found.sort((a, b) => b.lines - a.lines);
for (const f of found.slice(0, top)) console.log(`${String(f.lines).padStart(4)}  ${f.name}  ${f.where}`);
