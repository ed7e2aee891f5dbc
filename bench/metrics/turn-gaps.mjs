// Does a warm turn wait on anything but the model? Runs floor (a), the embedded turn and the gateway host (driven by
// the gateway client in latency mode) against one fake model, each under lib/turn-gaps-probe.mjs, `rounds` times
// interleaved, and prints per segment of a turn the median wall and event-loop idle time, and per turn the means of
// wall, idle, main-thread CPU and process CPU (every thread).
//   node bench/metrics/turn-gaps.mjs [--turns=200] [--rounds=2]
// Reading it: idle is the loop waiting (socket, timer, thread pool); main-thread CPU is its work; wall − idle − main
// thread CPU is time blocked outside the poll phase (synchronous I/O) or waiting for a core on a loaded machine.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BENCH_DIR, runMetricChild, startFakeModelProcess } from "../lib/child.mjs";
import { startGatewayHost } from "../lib/gateway-metrics.mjs";

const arg = (name, fallback) => {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.slice(name.length + 3)) : fallback;
};
const turns = arg("turns", 200);
const rounds = arg("rounds", 2);
const probe = path.join(BENCH_DIR, "lib", "turn-gaps-probe.mjs");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-turn-gaps-"));
const model = await startFakeModelProcess();

let runN = 0;
/** the probe's summary of one process: its warmup turns are skipped */
const probeEnv = (warmup) => {
  const out = path.join(tmp, `gaps-${runN++}.json`);
  return { out, env: { ...process.env, TURN_GAPS_OUT: out, TURN_GAPS_SKIP: String(warmup) } };
};
const read = (out) => JSON.parse(fs.readFileSync(out, "utf8"));

async function floor() {
  const { out, env } = probeEnv(50);
  await runMetricChild(
    "metrics/floor-turn.mjs",
    { baseUrl: model.baseUrl, turns, warmup: 50, concurrentTurns: 1 },
    { execArgv: ["--import", probe], env },
  );
  return read(out);
}

async function embedded() {
  const { out, env } = probeEnv(30);
  await runMetricChild(
    "metrics/embedded-turn.mjs",
    { baseUrl: model.baseUrl, turns, warmup: 30 },
    { execArgv: ["--import", probe], env, timeoutMs: 300_000 },
  );
  return read(out);
}

async function gateway() {
  const { out, env } = probeEnv(30);
  const host = await startGatewayHost(model.baseUrl, { execArgv: ["--import", probe], env });
  try {
    await runMetricChild("metrics/gateway-client.mjs", { mode: "latency", url: host.url, turns, warmup: 30 });
  } finally {
    await host.stop();
  }
  return read(out);
}

const results = { floor: [], embedded: [], gateway: [] };
try {
  for (let r = 0; r < rounds; r++) {
    results.floor.push(await floor());
    results.embedded.push(await embedded());
    results.gateway.push(await gateway());
  }
} finally {
  await model.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}

const f = (x) => x.toFixed(3).padStart(7);
for (const [name, runs] of Object.entries(results)) {
  process.stdout.write(
    `\n${name} (${runs.map((r) => r.turns).join(", ")} turns; per round: wall / idle ms, medians)\n`,
  );
  const segments = runs[0].rows.map((r) => r.segment);
  segments.forEach((segment, k) => {
    process.stdout.write(
      `  ${segment.padEnd(14)}${runs.map((r) => `${f(r.rows[k].wallMs)} /${f(r.rows[k].idleMs)}`).join("   ")}\n`,
    );
  });
  process.stdout.write(
    `  ${"whole turn".padEnd(14)}${runs.map((r) => `${f(r.total.wallMs)} /${f(r.total.idleMs)}`).join("   ")}\n`,
  );
  for (const key of ["wallMs", "idleMs", "threadCpuMs", "processCpuMs"]) {
    process.stdout.write(`  mean ${key.padEnd(9)}${runs.map((r) => f(r.means[key])).join("   ")}\n`);
  }
}
