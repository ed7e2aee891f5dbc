// Node/V8 flags and allocator settings against a gateway's RSS after 1,000 turns and its CPU per turn.
//   node bench/metrics/gateway-flags.mjs [rounds]   (after `npm run build`)
// For each setting below, a fresh gateway host (as the gateway.rss row: --expose-gc, 100 sessions × 10 turns after
// one warm-up turn) reports VmRSS after the turns and the CPU (user + system, /proc) it spent on them, per turn. The
// settings are run interleaved, `rounds` times each (default 2), so that a busy moment of this shared machine does not
// land on one setting only; medians are printed at the end.

import { GATEWAY_NODE_ENV, GATEWAY_NODE_FLAGS } from "../../dist/cli/gateway-flags.js";
import { runMetricChild, startFakeModelProcess } from "../lib/child.mjs";
import { cpuMsOf, peakRssOf, rssOf } from "../lib/gateway.mjs";
import { startGatewayHost } from "../lib/gateway-metrics.mjs";
import { median } from "../lib/stats.mjs";

const rounds = Number(process.argv[2] ?? 2);
const only = process.argv[3]?.split(",");
const settings = [
  { name: "none (Node 24 default)", execArgv: [] },
  { name: "--max-semi-space-size=8", execArgv: ["--max-semi-space-size=8"] },
  { name: "--max-semi-space-size=4", execArgv: ["--max-semi-space-size=4"] },
  { name: "--max-semi-space-size=2", execArgv: ["--max-semi-space-size=2"] },
  { name: "--optimize-for-size", execArgv: ["--optimize-for-size"] },
  { name: "semi 4 + --optimize-for-size", execArgv: ["--max-semi-space-size=4", "--optimize-for-size"] },
  { name: "semi 4 + MALLOC_ARENA_MAX=2", execArgv: ["--max-semi-space-size=4"], env: { MALLOC_ARENA_MAX: "2" } },
  {
    name: "semi 4 + MALLOC_TRIM_THRESHOLD_=128K",
    execArgv: ["--max-semi-space-size=4"],
    env: { MALLOC_TRIM_THRESHOLD_: "131072" },
  },
  { name: "semi 4 + --v8-pool-size=1", execArgv: ["--max-semi-space-size=4", "--v8-pool-size=1"] },
  { name: "semi 4 + --max-lazy", execArgv: ["--max-semi-space-size=4", "--max-lazy"] },
  {
    name: "semi 4 + MALLOC_ARENA_MAX=2 + --v8-pool-size=1",
    execArgv: ["--max-semi-space-size=4", "--v8-pool-size=1"],
    env: { MALLOC_ARENA_MAX: "2" },
  },
  { name: "semi 2 + MALLOC_ARENA_MAX=2", execArgv: ["--max-semi-space-size=2"], env: { MALLOC_ARENA_MAX: "2" } },
  { name: "semi 4 + --single-threaded-gc", execArgv: ["--max-semi-space-size=4", "--single-threaded-gc"] },
  { name: "semi 4 + --v8-pool-size=2", execArgv: ["--max-semi-space-size=4", "--v8-pool-size=2"] },
  { name: "shipped (gateway-flags.ts)", execArgv: GATEWAY_NODE_FLAGS, env: GATEWAY_NODE_ENV },
  // 15-19: what is left after the shipped settings (rss2): old-space pages V8 keeps, the main malloc arena
  {
    name: "shipped + --heap-growing-percent=30",
    execArgv: [...GATEWAY_NODE_FLAGS, "--heap-growing-percent=30"],
    env: GATEWAY_NODE_ENV,
  },
  {
    name: "shipped + --heap-growing-percent=50",
    execArgv: [...GATEWAY_NODE_FLAGS, "--heap-growing-percent=50"],
    env: GATEWAY_NODE_ENV,
  },
  {
    name: "shipped + --heap-growing-percent=100",
    execArgv: [...GATEWAY_NODE_FLAGS, "--heap-growing-percent=100"],
    env: GATEWAY_NODE_ENV,
  },
  {
    name: "shipped + --compact-on-every-full-gc",
    execArgv: [...GATEWAY_NODE_FLAGS, "--compact-on-every-full-gc"],
    env: GATEWAY_NODE_ENV,
  },
  {
    name: "shipped + MALLOC_TRIM_THRESHOLD_=128K",
    execArgv: GATEWAY_NODE_FLAGS,
    env: { ...GATEWAY_NODE_ENV, MALLOC_TRIM_THRESHOLD_: "131072" },
  },
  {
    name: "shipped + MALLOC_MMAP_THRESHOLD_=64K",
    execArgv: GATEWAY_NODE_FLAGS,
    env: { ...GATEWAY_NODE_ENV, MALLOC_MMAP_THRESHOLD_: "65536" },
  },
  {
    name: "shipped + --no-page-promotion",
    execArgv: [...GATEWAY_NODE_FLAGS, "--no-page-promotion"],
    env: GATEWAY_NODE_ENV,
  },
].filter((_s, i) => !only || only.includes(String(i)));

const model = await startFakeModelProcess();
const results = new Map(settings.map((s) => [s.name, []]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const s of settings) {
      const host = await startGatewayHost(model.baseUrl, {
        execArgv: ["--expose-gc"],
        nodeFlags: s.execArgv,
        nodeEnv: s.env ?? {},
      });
      try {
        const start = rssOf(host.pid);
        await runMetricChild(
          "metrics/gateway-client.mjs",
          { mode: "throughput", url: host.url, sessions: 1, turns: 1, repeats: 1, warm: false },
          { timeoutMs: 60_000 },
        );
        const cpu0 = cpuMsOf(host.pid);
        // the time V8 stopped the main thread for GC during the turns, and how often (the loop probe's 5 ms timer
        // runs alongside, the same for every setting)
        await host.command("loop-start");
        await runMetricChild(
          "metrics/gateway-client.mjs",
          { mode: "throughput", url: host.url, sessions: 100, turns: 10, repeats: 1, warm: false },
          { timeoutMs: 600_000 },
        );
        const { gc } = await host.command("loop-stop");
        const row = {
          gcMsPerTurn: gc.ms / 1000,
          gcCount: gc.count,
          start: start / 1e6,
          rss: rssOf(host.pid) / 1e6,
          peak: peakRssOf(host.pid) / 1e6,
          cpuPerTurn: (cpuMsOf(host.pid) - cpu0) / 1000,
        };
        results.get(s.name).push(row);
        console.log(
          `round ${r + 1} ${s.name}: start ${row.start.toFixed(1)} MB, after 1,000 turns ${row.rss.toFixed(1)} MB ` +
            `(peak ${row.peak.toFixed(1)}), CPU ${row.cpuPerTurn.toFixed(2)} ms/turn, GC ${row.gcMsPerTurn.toFixed(2)} ms/turn ` +
            `(${row.gcCount} pauses)`,
        );
      } finally {
        await host.stop();
      }
    }
  }
} finally {
  await model.stop();
}
console.log(
  "\n| setting | RSS after 1,000 turns (median; runs) | RSS at start | CPU per turn (median; runs) | GC pause per turn (median) |",
);
console.log("|---|---|---|---|---|");
for (const [name, rows] of results) {
  const f = (k, d) => rows.map((x) => x[k].toFixed(d)).join(", ");
  console.log(
    `| ${name} | ${median(rows.map((x) => x.rss)).toFixed(1)} MB (${f("rss", 1)}) | ${median(rows.map((x) => x.start)).toFixed(1)} MB | ` +
      `${median(rows.map((x) => x.cpuPerTurn)).toFixed(2)} ms (${f("cpuPerTurn", 2)}) | ` +
      `${median(rows.map((x) => x.gcMsPerTurn)).toFixed(2)} ms |`,
  );
}
