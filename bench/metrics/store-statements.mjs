// SQLite statements and transactions per embedded warm turn, by SQL: which store work a turn repeats.
//   node bench/metrics/store-statements.mjs      (after `npm run build`; starts its own fake model)
// The node is composed as embedded-breakdown.mjs does; after 30 warm-up turns every prepared statement's run/get/all
// is counted (better-sqlite3's Statement prototype, wrapped) over 100 turns; sessions rotate every 10 turns.
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "../../dist/config/index.js";
import { createLogger } from "../../dist/infra/logger.js";
import { composeSqliteNode } from "../../dist/node/compose.js";
import { SqliteStoreAdapter } from "../../dist/storage/sqlite-adapter.js";
import { openStore } from "../../dist/storage/sqlite-store.js";
import { startFakeModelProcess } from "../lib/child.mjs";
import { benchConfig, noopTool } from "../lib/model.mjs";

const model = await startFakeModelProcess();
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-count-"));
const store = openStore(stateDir);
const node = composeSqliteNode({
  role: "bench",
  config: parseConfig(benchConfig(model.baseUrl)),
  stateDir,
  store: new SqliteStoreAdapter(store),
  logger: createLogger(),
  tools: [noopTool],
});
const { service } = node;
let n = 0;
const turn = async () => {
  const a = await service.accept({ message: "hello", idempotencyKey: `c-${n++}`, sessionKey: `c-${n % 10}` });
  await service.final(a.runId);
};
for (let i = 0; i < 30; i++) await turn();
const req = createRequire(path.resolve("node_modules/better-sqlite3/package.json"));
const Database = req("better-sqlite3");
const probe = new Database(":memory:");
const SP = Object.getPrototypeOf(probe.prepare("select 1"));
const counts = {};
const sql = {};
for (const m of ["run", "get", "all", "iterate"]) {
  const orig = SP[m];
  SP[m] = function (...a) {
    counts[m] = (counts[m] ?? 0) + 1;
    const k = this.source.slice(0, 60);
    sql[k] = (sql[k] ?? 0) + 1;
    return orig.apply(this, a);
  };
}
const T = 100; // turns counted
for (let i = 0; i < T; i++) await turn();
await new Promise((r) => setTimeout(r, 300));
console.log("per turn:", Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / T])));
for (const [k, v] of Object.entries(sql).sort((a, b) => b[1] - a[1]))
  console.log((v / T).toFixed(2), k.replace(/\s+/g, " "));
await node.close();
await model.stop();
fs.rmSync(stateDir, { recursive: true, force: true });
