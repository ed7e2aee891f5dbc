// System calls per embedded warm turn, by call: deterministic where wall and CPU times are not (a loaded machine).
//   node bench/metrics/turn-syscalls.mjs [<repo root with dist/> ...]   (default: this repo; needs strace)
// Runs metrics/embedded-turn.mjs of each root under `strace -f -c` with 100 and with 300 measured turns (30 warm-up,
// sessions rotating every 10) and prints the difference / 200, so start-up and warm-up cancel out.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT_DIR, startFakeModelProcess } from "../lib/child.mjs";

const roots = process.argv.length > 2 ? process.argv.slice(2) : [ROOT_DIR];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-syscalls-"));
const model = await startFakeModelProcess();
const counts = (root, turns) => {
  const out = path.join(tmp, `${root.replace(/\W/g, "_")}-${turns}.txt`);
  execFileSync(
    "strace",
    [
      "-f",
      "-c",
      "-o",
      out,
      process.execPath,
      `${root}/bench/metrics/embedded-turn.mjs`,
      JSON.stringify({ baseUrl: model.baseUrl, turns, warmup: 30 }),
    ],
    { stdio: "ignore" },
  );
  const m = new Map();
  for (const line of fs.readFileSync(out, "utf8").split("\n")) {
    const f = line.trim().split(/\s+/);
    // "% time, seconds, usecs/call, calls, [errors], syscall"; the "total" row too
    if (f.length >= 5 && /^\d/.test(f[0]) && /^[a-z_0-9]+$/.test(f.at(-1))) m.set(f.at(-1), Number(f[3]));
  }
  return m;
};
for (const root of roots) {
  const a = counts(root, 100),
    b = counts(root, 300);
  const perTurn = (k) => (b.get(k) - (a.get(k) ?? 0)) / 200;
  const rows = [...b.keys()]
    .filter((k) => k !== "total")
    .map((k) => [k, perTurn(k)])
    .filter(([, v]) => v >= 0.05)
    .sort((x, y) => y[1] - x[1]);
  console.log(`== ${root}: system calls per warm turn ${perTurn("total").toFixed(1)}`);
  for (const [k, v] of rows) console.log(`${v.toFixed(2).padStart(8)}  ${k}`);
}
await model.stop();
fs.rmSync(tmp, { recursive: true, force: true });
