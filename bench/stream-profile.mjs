// Profiles the streaming window of the gateway and of the bare relay (floor (s)) at the same N, one after the other
// against one model process, and prints where a token's CPU goes in each (lib/stream-phases.mjs). The profiler slows
// both; compare the two columns, not the unprofiled rows of `npm run bench -- --only=stream`.
//   node bench/stream-profile.mjs [N=100] [--out=dir]     (needs `npm run build`)
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { BENCH_DIR } from "./lib/child.mjs";
import { lineChild, measureLevel } from "./lib/stream-metrics.mjs";

const n = Number.parseInt(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? "100", 10);
const out =
  process.argv.find((a) => a.startsWith("--out="))?.slice(6) ??
  path.join(BENCH_DIR, "results", "profiles", `stream-${n}`);
fs.mkdirSync(out, { recursive: true });
const plan = { stream: { tokens: 2000, rate: 50, startSpreadMs: 2000, warmupMs: 4000, windowMs: 10_000 } };
const progress = (line) => process.stderr.write(`${line}\n`);
const epochMs = Date.now();
const model = lineChild("metrics/stream-model.mjs", { epochMs }, { verbose: false, timeoutMs: 600_000 });
const files = {};
const tokens = {};
try {
  const { baseUrl } = await model.line();
  for (const [name, floor] of [
    ["gateway", false],
    ["relay", true],
  ]) {
    files[name] = path.join(out, `${name}.cpuprofile`);
    const level = await measureLevel({
      n,
      modelUrl: baseUrl,
      modelPid: model.pid,
      epochMs,
      plan,
      verbose: false,
      progress,
      profileFile: files[name],
      floor,
    });
    tokens[name] = level.tokens;
  }
} finally {
  model.stop();
}
process.stdout.write(
  execFileSync(
    process.execPath,
    [
      path.join(BENCH_DIR, "lib", "stream-phases.mjs"),
      files.gateway,
      String(tokens.gateway),
      files.relay,
      String(tokens.relay),
      "--files",
    ],
    { encoding: "utf8" },
  ),
);
