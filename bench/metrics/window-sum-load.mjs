#!/usr/bin/env node
/**
 * What a budget window's load costs (limits/window-sums.ts): `Store.sumCost` of a day window as main's build reads
 * it (the sums) against this build's (the sums and the recent rows' ids, `idsSince`), on SQLite and, with
 * LOOPGATE_BENCH_POSTGRES_URL or LOOPGATE_TEST_POSTGRES_URL, Postgres. Rounds alternate before/after; medians per
 * read. A load happens on a window's first use and once per limits.syncIntervalMs (5 s), never in a budget check.
 *
 *   node bench/metrics/window-sum-load.mjs [--before=/work/before] [--rows=50000] [--recent=20,5000] [--rounds=4]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? dflt;
const here = path.resolve(import.meta.dirname, "../..");
const beforeRoot = path.resolve(arg("before", "/work/before"));
const ROWS = Number(arg("rows", "50000"));
const RECENT = arg("recent", "20,5000").split(",").map(Number);
const ROUNDS = Number(arg("rounds", "4"));
const READS = 200;
const NOW = Date.UTC(2026, 11, 5, 12);
const DAY = { since: Date.UTC(2026, 11, 5), until: Date.UTC(2026, 11, 6) };
const HORIZON_MS = 10_000;

const load = (root, file) => import(pathToFileURL(path.join(root, "dist", file)).href);

function rows(n, recent) {
  const out = [];
  for (let i = 0; i < n; i++) {
    // the last `recent` rows fall in the last 10 s, the others earlier in the day
    const ts = i >= n - recent ? NOW - Math.floor((HORIZON_MS * (n - i)) / (recent + 1)) : DAY.since + i * 100;
    out.push({
      id: `row-${i}-${Math.random().toString(36).slice(2)}`,
      ts,
      runId: `r${i}`,
      sessionKey: `agent:main:s${i % 50}`,
      agentId: i % 2 === 0 ? "main" : "ops",
      provider: "fake",
      model: "m",
      inputTokens: 500,
      outputTokens: 100,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      totalTokens: 600,
      costUsd: 0.008,
    });
  }
  return out;
}

async function timeReads(sum) {
  const times = [];
  for (let i = 0; i < READS; i++) {
    const t = process.hrtime.bigint();
    await sum();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function compare(label, before, after, query) {
  const b = [];
  const a = [];
  const readBefore = async () => b.push(await timeReads(() => before.sumCost(query)));
  const readAfter = async () => a.push(await timeReads(() => after.sumCost({ ...query, idsSince: NOW - HORIZON_MS })));
  for (let r = 0; r < ROUNDS; r++) {
    // alternating which goes first in a round
    if (r % 2 === 0) {
      await readBefore();
      await readAfter();
    } else {
      await readAfter();
      await readBefore();
    }
  }
  const ids = (await after.sumCost({ ...query, idsSince: NOW - HORIZON_MS })).ids.length;
  const fmt = (xs) => `${median(xs).toFixed(3)} ms (${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)})`;
  console.log(`| ${label} | ${fmt(b)} | ${fmt(a)} | ${ids} |`);
}

console.log("| window read | before (sums) | after (sums + ids) | ids returned |");
console.log("|---|---|---|---|");
for (const recent of RECENT) {
  const data = rows(ROWS, recent);
  const query = { ...DAY, agentId: "main" };
  // SQLite: one file, read by main's store and by this build's
  const dir = mkdtempSync(path.join(tmpdir(), "window-sum-load-"));
  try {
    const file = path.join(dir, "db.sqlite");
    const { SqliteStore: After } = await load(here, "storage/sqlite-store.js");
    const after = new After(file);
    for (let i = 0; i < data.length; i += 500) after.appendCostRows(data.slice(i, i + 500));
    const { SqliteStore: Before } = await load(beforeRoot, "storage/sqlite-store.js");
    const before = new Before(file);
    await compare(
      `SQLite, ${ROWS} rows in the day, ${recent / 2} of the agent's in the last 10 s`,
      before,
      after,
      query,
    );
    before.close?.();
    after.close?.();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const url = process.env.LOOPGATE_BENCH_POSTGRES_URL || process.env.LOOPGATE_TEST_POSTGRES_URL;
  if (!url) continue;
  const { createTestSchema } = await load(here, "testing/postgres-schema.js");
  const ts = await createTestSchema(url);
  try {
    const { openPostgresStore: openAfter } = await load(here, "storage/postgres/store.js");
    const after = await openAfter({ ...ts.options, poolMax: 2 });
    for (let i = 0; i < data.length; i += 500) await after.appendCostRows(data.slice(i, i + 500));
    await after.pool.query("ANALYZE cost_ledger");
    const { openPostgresStore: openBefore } = await load(beforeRoot, "storage/postgres/store.js");
    const before = await openBefore({ ...ts.options, poolMax: 2 });
    await compare(
      `Postgres, ${ROWS} rows in the day, ${recent / 2} of the agent's in the last 10 s`,
      before,
      after,
      query,
    );
    await before.close();
    await after.close();
  } finally {
    await ts.drop();
  }
}

// `add` (every model call, and every call another node announces) with 10,000 session windows loaded, most recently
// (their reads' names still kept), and the check before a call (`spent` of a loaded window: a map lookup)
async function sumsWith(root) {
  const { SqliteStore } = await load(root, "storage/sqlite-store.js");
  const { SqliteStoreAdapter } = await load(root, "storage/sqlite-adapter.js");
  const { WindowSums } = await load(root, "limits/window-sums.js");
  const store = new SqliteStoreAdapter(new SqliteStore(":memory:"));
  await store.appendCostRows(rows(2000, 2000).map((r, i) => ({ ...r, sessionKey: `agent:main:s${i % 10_000}` })));
  const clock = { now: () => NOW, setTimeout: () => 0, clearTimeout: () => {} };
  const sums = new WindowSums({ store, clock, syncIntervalMs: 600_000, unwritten: () => [] });
  for (let i = 0; i < 10_000; i++)
    await sums.spent(`s${i}`, { sessionKey: `agent:main:s${i}` }, { ...DAY, rolling: false });
  return { sums, store };
}
const CALLS = 20_000;
const perCall = (fn) => {
  const t = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) fn(i);
  return Number(process.hrtime.bigint() - t) / CALLS / 1000;
};
const variants = { before: await sumsWith(beforeRoot), after: await sumsWith(here) };
const adds = { before: [], after: [] };
const checks = { before: [], after: [] };
for (let r = 0; r < ROUNDS; r++) {
  // the order alternates: the second measured in a round was slower whichever it was (the first one's garbage)
  const order = r % 2 === 0 ? ["before", "after"] : ["after", "before"];
  for (const name of order) {
    const { sums } = variants[name];
    adds[name].push(
      perCall((i) =>
        sums.add({
          id: `n${r}-${i}`,
          agentId: "main",
          sessionKey: `agent:main:s${i % 10_000}`,
          ts: NOW,
          totalTokens: 1,
          costUsd: 0,
        }),
      ),
    );
    const t = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) await sums.spent(`s${i % 10_000}`, {}, { ...DAY, rolling: false });
    checks[name].push(Number(process.hrtime.bigint() - t) / CALLS / 1000);
  }
}
const us = (xs) => `${median(xs).toFixed(2)} µs (${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)})`;
console.log("\n| 10,000 session windows loaded | before | after |");
console.log("|---|---|---|");
console.log(`| add (a call made or heard) | ${us(adds.before)} | ${us(adds.after)} |`);
console.log(`| budget check of a loaded window | ${us(checks.before)} | ${us(checks.after)} |`);
for (const { store } of Object.values(variants)) await store.close();
