// CPU per warm turn, embedded and gateway, of several builds measured in interleaved rounds: a before/after
// comparison that a loaded machine disturbs less than the bench's wall-time rows.
//   node bench/metrics/turn-cpu-ab.mjs [--rounds=5] [--turns=300] [--strace] <repo root with dist/> ...
// Each round runs, for every root in turn: that root's metrics/embedded-turn.mjs (CPU of its own process per
// turn) and that root's gateway host driven by this repo's GatewayClient (the gateway process's CPU per turn from
// /proc: 10 ms resolution, so many turns). With --strace the gateway's system calls per turn are counted too
// (strace -c attached for the measured turns only; it slows the gateway, so those rounds' CPU is not comparable).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { GatewayClient } from "../../dist/client/index.js";
import { startFakeModelProcess } from "../lib/child.mjs";
import { cpuMsOf } from "../lib/gateway.mjs";
import { median } from "../lib/stats.mjs";

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a ? Number(a.split("=")[1]) : dflt;
};
const rounds = flag("rounds", 5);
const turns = flag("turns", 300);
const warmup = 50;
const withStrace = args.includes("--strace");
// absolute, since each root's gateway-metrics.mjs is imported by path (a relative one would resolve against this file)
const roots = args.filter((a) => !a.startsWith("--")).map((a) => path.resolve(a));
if (!roots.length) throw new Error("usage: turn-cpu-ab.mjs [--rounds=N] [--turns=N] [--strace] <root> ...");

const model = await startFakeModelProcess();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-turn-cpu-"));

function embedded(root) {
  const out = execFileSync(
    process.execPath,
    [`${root}/bench/metrics/embedded-turn.mjs`, JSON.stringify({ baseUrl: model.baseUrl, turns, warmup })],
    { encoding: "utf8" },
  );
  const line = out.trim().split("\n").at(-1);
  return JSON.parse(line.slice(line.indexOf("{"))).cpuMsPerTurn;
}

async function gateway(root) {
  const { startGatewayHost } = await import(`${root}/bench/lib/gateway-metrics.mjs`);
  const host = await startGatewayHost(model.baseUrl);
  try {
    const client = await GatewayClient.connect({ url: host.url });
    let n = 0;
    const turn = (i) =>
      client.agent({ message: "hello", idempotencyKey: `ab-${n++}`, sessionKey: `ab-${Math.floor(i / 10)}` });
    for (let i = 0; i < warmup; i++) await turn(i);
    let strace;
    const straceOut = path.join(tmp, `strace-${process.hrtime.bigint()}.txt`);
    if (withStrace) {
      strace = spawn("strace", ["-f", "-c", "-o", straceOut, "-p", String(host.pid)], { stdio: "ignore" });
      await new Promise((r) => setTimeout(r, 500));
    }
    const cpu0 = cpuMsOf(host.pid);
    for (let i = warmup; i < warmup + turns; i++) await turn(i);
    const cpu = (cpuMsOf(host.pid) - cpu0) / turns;
    let calls;
    if (strace) {
      strace.kill("SIGINT");
      await new Promise((r) => strace.once("exit", r));
      calls = new Map();
      for (const line of fs.readFileSync(straceOut, "utf8").split("\n")) {
        const f = line.trim().split(/\s+/);
        if (f.length >= 5 && /^\d/.test(f[0]) && /^[a-z_0-9]+$/.test(f.at(-1))) calls.set(f.at(-1), Number(f[3]));
      }
    }
    await client.close();
    return { cpu, calls };
  } finally {
    await host.stop();
  }
}

const results = new Map(roots.map((r) => [r, { embedded: [], gateway: [], calls: [] }]));
try {
  for (let r = 0; r < rounds; r++) {
    for (const root of roots) {
      const res = results.get(root);
      res.embedded.push(embedded(root));
      const g = await gateway(root);
      res.gateway.push(g.cpu);
      if (g.calls) res.calls.push(g.calls);
      console.error(
        `round ${r + 1} ${root}: embedded ${res.embedded.at(-1).toFixed(3)} ms, gateway ${g.cpu.toFixed(3)} ms`,
      );
    }
  }
} finally {
  await model.stop();
}
const fmt = (xs) => `${median(xs).toFixed(3)} (${xs.map((x) => x.toFixed(2)).join(" ")})`;
for (const root of roots) {
  const res = results.get(root);
  console.log(
    `${root}\n  embedded CPU ms/turn median ${fmt(res.embedded)}\n  gateway CPU ms/turn median ${fmt(res.gateway)}`,
  );
  if (res.calls.length) {
    const names = new Set(res.calls.flatMap((m) => [...m.keys()]));
    const rows = [...names]
      .map((k) => [k, median(res.calls.map((m) => (m.get(k) ?? 0) / turns))])
      .sort((a, b) => b[1] - a[1]);
    for (const [k, v] of rows) if (v >= 0.05) console.log(`    ${v.toFixed(2).padStart(7)}  ${k}`);
  }
}
fs.rmSync(tmp, { recursive: true, force: true });
