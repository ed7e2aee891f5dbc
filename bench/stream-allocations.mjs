// What the gateway allocates per streamed token, by the function that allocates (V8's sampling heap profiler over the
// streaming window at N concurrent streams, objects later collected included). Why it matters: with the young
// generation capped (src/cli/gateway-flags.ts, --max-semi-space-size=4) every ~4 MB allocated is a scavenge, so bytes
// per token set how many collections a second of streaming costs.
//   node bench/stream-allocations.mjs [N=100] [--out=dir]     (needs `npm run build`)
import fs from "node:fs";
import path from "node:path";
import { BENCH_DIR } from "./lib/child.mjs";
import { shortUrl } from "./lib/profile.mjs";
import { lineChild, measureLevel } from "./lib/stream-metrics.mjs";

const n = Number.parseInt(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? "100", 10);
const out =
  process.argv.find((a) => a.startsWith("--out="))?.slice(6) ??
  path.join(BENCH_DIR, "results", "profiles", `stream-alloc-${n}`);
fs.mkdirSync(out, { recursive: true });
const plan = { stream: { tokens: 2000, rate: 50, startSpreadMs: 2000, warmupMs: 4000, windowMs: 10_000 } };
const epochMs = Date.now();
const model = lineChild("metrics/stream-model.mjs", { epochMs }, { verbose: false, timeoutMs: 600_000 });
const file = path.join(out, "gateway.heapprofile");
let level;
try {
  const { baseUrl } = await model.line();
  level = await measureLevel({
    n,
    modelUrl: baseUrl,
    modelPid: model.pid,
    epochMs,
    plan,
    verbose: false,
    progress: (line) => process.stderr.write(`${line}\n`),
    allocFile: file,
    floor: false,
  });
} finally {
  model.stop();
}
// self bytes by function (the sampled allocation sites), per token
const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const bytes = new Map();
let total = 0;
const walk = (node) => {
  const self = node.selfSize ?? 0;
  if (self > 0) {
    const cf = node.callFrame;
    const key = `${cf.functionName || "(anonymous)"} ${cf.url ? `${shortUrl(cf.url)}:${cf.lineNumber + 1}` : ""}`;
    bytes.set(key, (bytes.get(key) ?? 0) + self);
    total += self;
  }
  for (const c of node.children ?? []) walk(c);
};
walk(profile.head);
const perToken = (b) => (b / level.tokens).toFixed(0).padStart(7);
process.stdout.write(`N=${n}: ${level.tokens} tokens in the window, ${perToken(total).trim()} B/token sampled\n`);
for (const [key, b] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, 30))
  process.stdout.write(`${perToken(b)} B/token  ${key}\n`);
