// The cold CLI's import graph: which modules `loopgate agent --local` and `loopgate agent --url` (through a running
// `loopgate gateway`) load, and how long each module's own top-level code runs, grouped by package.
//   node bench/metrics/import-times.mjs [--json=file]      (after `npm run build`; starts its own fake model)
//
// How: the CLI runs with `--import` of this file and LOOPGATE_IMPORT_TIMES_OUT set; in that mode the file only installs
// synchronous module hooks (`module.registerHooks`, which see both `import` and `require`). The load hook wraps each
// module's source in two calls, one first and one last, so the gap is the module's evaluation. ESM evaluates its
// dependencies before its body, CommonJS inside it, so a stack subtracts nested modules: what is left is the module's
// own time. Parsing and compiling happen outside those calls: the process's wall time minus the evaluations, minus
// the command's own work, is node's start, the loader and V8's compile (the `other` line). A module with top-level
// await counts what it awaits (dist/cli/main.js awaits the whole command: its line is the command).
// Wall times are medians of 11 spawns of each command, interleaved with `node -e 0`, without the hooks.
import fs from "node:fs";
import { registerHooks } from "node:module";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";

const OUT = process.env.LOOPGATE_IMPORT_TIMES_OUT;
if (OUT) installHooks(OUT);
else await main();

function installHooks(outFile) {
  const mods = new Map(); // url -> { parent, bytes, ownMs, startMs }
  const stack = [];
  globalThis.__loopgateImportTimes = {
    s(url) {
      stack.push({ url, t0: performance.now(), nested: 0 });
    },
    e(url) {
      const top = stack.pop();
      if (!top || top.url !== url) return; // a module that threw part-way: its figures are dropped
      const spent = performance.now() - top.t0;
      const m = mods.get(url);
      if (m) {
        m.ownMs = spent - top.nested;
        m.startMs = top.t0;
      }
      if (stack.length) stack.at(-1).nested += spent;
    },
  };
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const r = nextResolve(specifier, context);
      if (r.url.startsWith("file:") && !mods.has(r.url)) mods.set(r.url, { parent: context.parentURL, ownMs: 0 });
      return r;
    },
    load(url, context, nextLoad) {
      const r = nextLoad(url, context);
      // a module's format is undefined when CommonJS require()s it
      if (!url.startsWith("file:") || !["module", "commonjs", undefined].includes(r.format)) return r;
      if (!/\.[cm]?js$/.test(url)) return r; // JSON, native addons
      // the default loader may leave the source to require() itself: read it here then
      let src = String(r.source ?? fs.readFileSync(new URL(url), "utf8"));
      const m = mods.get(url) ?? { ownMs: 0 };
      m.bytes = src.length;
      mods.set(url, m);
      const u = JSON.stringify(url);
      // after a shebang and a "use strict" directive, so neither loses its meaning
      // (comments may come before the directive)
      const head = /^(#![^\n]*\n)?((\s|\/\/[^\n]*\n|\/\*[\s\S]*?\*\/)*(["'])use strict\4)?/.exec(src)[0];
      src = `${head};globalThis.__loopgateImportTimes.s(${u});${src.slice(head.length)}\n;globalThis.__loopgateImportTimes.e(${u});\n`;
      return { ...r, source: src };
    },
  });
  process.on("exit", () => {
    const list = [...mods].map(([url, m]) => ({ url, ...m }));
    fs.writeFileSync(outFile, JSON.stringify({ wallMs: performance.now(), modules: list }));
  });
}

async function main() {
  const { fileURLToPath } = await import("node:url");
  const { CLI, ROOT_DIR, startFakeModelProcess, timeProcess } = await import("../lib/child.mjs");
  const { startCliGateway } = await import("../lib/gateway-metrics.mjs");
  const { prepareStateDir } = await import("../lib/model.mjs");
  const { median } = await import("../lib/stats.mjs");
  const self = fileURLToPath(import.meta.url);
  const jsonOut = process.argv.find((a) => a.startsWith("--json="))?.slice(7);

  /** The group a module belongs to: an npm package (scopes folded, @opentelemetry/* as one), else dist/<folder>. */
  const groupOf = (url) => {
    const p = path.relative(ROOT_DIR, fileURLToPath(url));
    const nm = p.lastIndexOf("node_modules/");
    if (nm >= 0) {
      const [a, b] = p.slice(nm + 13).split("/");
      if (a === "@opentelemetry") return "@opentelemetry/*";
      return a.startsWith("@") ? `${a}/${b}` : a;
    }
    const parts = p.split("/");
    return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : p;
  };
  /** The chain of importers from the entry to the first module of `group`: why the group is loaded at all. */
  const chainTo = (modules, group) => {
    const byUrl = new Map(modules.map((m) => [m.url, m]));
    let m = modules.find((x) => groupOf(x.url) === group);
    const chain = [];
    while (m && chain.length < 12) {
      chain.unshift(path.relative(ROOT_DIR, fileURLToPath(m.url)).replace(/^.*node_modules\//, ""));
      m = m.parent && byUrl.get(m.parent);
    }
    return chain.join(" -> ");
  };

  const model = await startFakeModelProcess();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-import-times-"));
  const { configPath } = await prepareStateDir(dir, model.baseUrl);
  const env = { ...process.env, LOOPGATE_STATE_DIR: dir, NO_COLOR: "1" };
  const gw = await startCliGateway({ configPath, env });
  const commands = {
    "agent --local": (s) => [CLI, "agent", "--local", "-m", "hello", "--config", configPath, "-s", `local-${s}`],
    "agent --url": (s) => [CLI, "agent", "-m", "hello", "--url", gw.url, "--config", configPath, "-s", `remote-${s}`],
  };
  const report = {};
  try {
    for (const [name, args] of Object.entries(commands)) {
      const first = await timeProcess(process.execPath, args("warm"), { env });
      if (first.code !== 0) throw new Error(`${name} exited ${first.code}: ${first.stderr.slice(0, 300)}`);
      const outFile = path.join(dir, "times.json");
      const hooked = await timeProcess(process.execPath, ["--import", self, ...args("hooked")], {
        env: { ...env, LOOPGATE_IMPORT_TIMES_OUT: outFile },
      });
      if (hooked.code !== 0) throw new Error(`${name} under the hooks exited ${hooked.code}: ${hooked.stderr}`);
      const { wallMs, modules } = JSON.parse(fs.readFileSync(outFile, "utf8"));
      const groups = new Map();
      for (const m of modules) {
        const g = groups.get(groupOf(m.url)) ?? { group: groupOf(m.url), modules: 0, kb: 0, ownMs: 0 };
        g.modules++;
        g.kb += (m.bytes ?? 0) / 1024;
        g.ownMs += m.ownMs;
        groups.set(g.group, g);
      }
      const wall = { node: [], cmd: [] };
      for (let i = 0; i < 11; i++) {
        wall.node.push((await timeProcess(process.execPath, ["-e", "0"])).ms);
        wall.cmd.push((await timeProcess(process.execPath, args(`run-${i}`), { env })).ms);
      }
      const sortedGroups = [...groups.values()].sort((a, b) => b.ownMs - a.ownMs);
      report[name] = {
        wallMs: median(wall.cmd),
        nodeMs: median(wall.node),
        hookedInProcessMs: wallMs,
        modules: modules.length,
        kb: modules.reduce((s, m) => s + (m.bytes ?? 0), 0) / 1024,
        groups: sortedGroups.map((g) => ({ ...g, why: chainTo(modules, g.group) })),
        // every module, slowest first (the text report prints the first 15)
        slowest: modules
          .sort((a, b) => b.ownMs - a.ownMs)
          .map((m) => ({
            module: path.relative(ROOT_DIR, fileURLToPath(m.url)),
            ownMs: m.ownMs,
            kb: (m.bytes ?? 0) / 1024,
          })),
      };
    }
  } finally {
    await gw.stop();
    await model.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(report, null, 2));
  for (const [name, r] of Object.entries(report)) {
    const f = (x, d = 1) => x.toFixed(d).padStart(7);
    process.stdout.write(
      `\n## ${name}: ${f(r.wallMs, 0)} ms wall (node -e 0: ${f(r.nodeMs, 0)} ms, ${(r.wallMs / r.nodeMs).toFixed(2)} ×); ` +
        `${r.modules} modules, ${r.kb.toFixed(0)} KB of source\n\n  own ms  modules      KB  group\n`,
    );
    for (const g of r.groups)
      process.stdout.write(`${f(g.ownMs)} ${String(g.modules).padStart(8)} ${f(g.kb, 0)}  ${g.group}\n`);
    process.stdout.write("\nwhy each npm package is loaded (first importer chain):\n");
    for (const g of r.groups.filter((x) => !x.group.startsWith("dist/")))
      process.stdout.write(`  ${g.group}: ${g.why}\n`);
    process.stdout.write("\nslowest modules (own ms):\n");
    for (const m of r.slowest.slice(0, 15)) process.stdout.write(`${f(m.ownMs)}  ${m.module}\n`);
  }
}
