// CPU inside the SQLite store per embedded warm turn, by store method and by SQL statement, measured in the turn
// itself: the same statement costs several times more there than in a loop of its own (the rest of the turn has
// evicted SQLite's code and pages from the CPU caches), so a microbenchmark of the store misranks what a turn pays.
//   node bench/metrics/store-turn-time.mjs [--turns=500] [<repo root with dist/> ...]   (default: this repo)
// Each root runs in a child process of its own: composeNode as embedded-turn.mjs does (the real openai-completions
// provider against one fake model process), 100 warm-up turns, then `turns` turns with every public SqliteStore
// method and every better-sqlite3 run/get/all wrapped in process.cpuUsage (sessions rotate every 10 turns).
// process.cpuUsage costs ~1 µs a call, so the figures carry that much per call; compare roots, not absolutes.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT_DIR, startFakeModelProcess } from "../lib/child.mjs";

const args = process.argv.slice(2);
const turnsArg = args.find((a) => a.startsWith("--turns="));
const turns = turnsArg ? Number(turnsArg.split("=")[1]) : 500;

if (args[0] === "--child") {
  const { root, baseUrl } = JSON.parse(args[1]);
  await measure(root, baseUrl);
  process.exit(0);
}

const roots = args.filter((a) => !a.startsWith("--"));
const model = await startFakeModelProcess();
try {
  for (const root of roots.length ? roots.map((r) => path.resolve(r)) : [ROOT_DIR]) {
    const out = execFileSync(
      process.execPath,
      [fileURLToPath(import.meta.url), "--child", JSON.stringify({ root, baseUrl: model.baseUrl }), `--turns=${turns}`],
      { encoding: "utf8" },
    );
    console.log(`== ${root}\n${out.trimEnd()}`);
  }
} finally {
  await model.stop();
}

async function measure(root, baseUrl) {
  const { SqliteStore } = await import(`${root}/dist/storage/sqlite-store.js`);
  const { parseConfig } = await import(`${root}/dist/config/index.js`);
  const { createLogger } = await import(`${root}/dist/infra/logger.js`);
  const { composeNode } = await import(`${root}/dist/node/compose.js`);
  const { benchConfig, noopTool } = await import(`${root}/bench/lib/model.mjs`);
  let counting = false;
  let depth = 0;
  const byMethod = new Map();
  const bySql = new Map();
  const add = (map, key, micros) => {
    const e = map.get(key) ?? { micros: 0, calls: 0 };
    e.micros += micros;
    e.calls += 1;
    map.set(key, e);
  };
  const cpu = (u) => {
    const c = process.cpuUsage(u);
    return c.user + c.system;
  };
  // outermost store call only: a method that calls another counts once
  for (const name of Object.getOwnPropertyNames(SqliteStore.prototype)) {
    const fn = SqliteStore.prototype[name];
    if (name === "constructor" || typeof fn !== "function") continue;
    SqliteStore.prototype[name] = function (...a) {
      if (!counting || depth > 0) {
        depth++;
        try {
          return fn.apply(this, a);
        } finally {
          depth--;
        }
      }
      depth++;
      const u = process.cpuUsage();
      try {
        return fn.apply(this, a);
      } finally {
        depth--;
        add(byMethod, name, cpu(u));
      }
    };
  }
  const Database = createRequire(path.join(root, "package.json"))("better-sqlite3");
  const statement = Object.getPrototypeOf(new Database(":memory:").prepare("SELECT 1"));
  for (const m of ["run", "get", "all"]) {
    const fn = statement[m];
    statement[m] = function (...a) {
      if (!counting) return fn.apply(this, a);
      const u = process.cpuUsage();
      try {
        return fn.apply(this, a);
      } finally {
        add(bySql, `${m} ${this.source.replace(/\s+/g, " ").slice(0, 72)}`, cpu(u));
      }
    };
  }
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-store-time-"));
  const node = await composeNode({
    role: "bench",
    config: parseConfig(benchConfig(baseUrl)),
    stateDir,
    logger: createLogger(),
    tools: [noopTool],
  });
  let n = 0;
  const turn = async (i) => {
    const accepted = await node.service.accept({
      message: "hello",
      idempotencyKey: `store-time-${n++}`,
      sessionKey: `store-time-${Math.floor(i / 10)}`,
    });
    const final = await node.service.final(accepted.runId);
    if (final.status !== "ok") throw new Error(`turn failed: ${JSON.stringify(final)}`);
  };
  for (let i = 0; i < 100; i++) await turn(i);
  counting = true;
  const u = process.cpuUsage();
  for (let i = 100; i < 100 + turns; i++) await turn(i);
  const whole = cpu(u) / turns;
  counting = false;
  const print = (title, map) => {
    const total = [...map.values()].reduce((s, e) => s + e.micros, 0) / turns;
    console.log(`${title}: ${total.toFixed(1)} µs of ${whole.toFixed(1)} µs CPU per turn`);
    for (const [key, e] of [...map].sort((a, b) => b[1].micros - a[1].micros).slice(0, 12)) {
      const perTurn = (e.micros / turns).toFixed(1).padStart(7);
      console.log(
        `${perTurn} µs/turn ${(e.calls / turns).toFixed(2)} calls ${(e.micros / e.calls).toFixed(1)} µs each  ${key}`,
      );
    }
  };
  print("store methods", byMethod);
  print("statements", bySql);
  await node.close();
  fs.rmSync(stateDir, { recursive: true, force: true });
}
