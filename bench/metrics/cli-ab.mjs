// Interleaved A/B of the cold CLI between another build (e.g. main's, checked out and built elsewhere) and this one:
// `agent --local` one turn and `agent --url` through one running gateway (this tree's, so both CLIs meet the same
// server), each spawn next to `node -e 0` and the bare ws client (bench/metrics/bare-remote-client.mjs), in
// alternating order, so a loaded machine slows both sides alike. Prints medians of wall time and of each process's
// own CPU time (user+sys at exit, through `--import` of bench/metrics/cpu-at-exit.mjs, given to every process
// measured, the floor too: CPU waits for a core less than wall time does on a shared machine), with their ratios to
// `node -e 0`.
//   node bench/metrics/cli-ab.mjs --before=/work/before [--n=31]      (after `npm run build` in both trees)
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { benchRespond, prepareStateDir } from "../lib/model.mjs";

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? dflt;
const trees = { before: path.resolve(arg("before", "")), after: here };
const n = Number(arg("n", "31"));
if (!process.argv.some((a) => a.startsWith("--before="))) throw new Error("cli-ab: --before=<other tree> is required");

const { startFakeModelServer } = await import(path.join(here, "dist/testing/fake-model-server.js"));
const model = await startFakeModelServer({ respond: benchRespond });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-cli-ab-"));

const cpuFile = path.join(tmp, "cpu.txt");
const probe = ["--import", path.join(here, "bench/metrics/cpu-at-exit.mjs")];
/** Runs one process; resolves its wall time and CPU time in ms. */
function run(args, env) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [...probe, ...args], {
      env: { ...process.env, ...env, LOOPGATE_CLI_AB_CPU_OUT: cpuFile },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("close", (code) => {
      if (code !== 0) throw new Error(`cli-ab: ${args.join(" ")} exited ${code}: ${stderr.slice(0, 300)}`);
      resolve({ ms: performance.now() - t0, cpu: Number(fs.readFileSync(cpuFile, "utf8")) });
    });
  });
}

// one state dir per tree for --local (each build its own database), one for the gateway
const local = {};
for (const [k, root] of Object.entries(trees)) {
  const dir = path.join(tmp, k);
  const { configPath } = await prepareStateDir(dir, model.baseUrl);
  local[k] = (s) =>
    run([`${root}/dist/cli/main.js`, "agent", "--local", "-m", "hello", "--config", configPath, "-s", s], {
      LOOPGATE_STATE_DIR: dir,
      NO_COLOR: "1",
    });
}
const gwDir = path.join(tmp, "gateway");
const { configPath: gwConfig } = await prepareStateDir(gwDir, model.baseUrl);
const gwEnv = { ...process.env, LOOPGATE_STATE_DIR: gwDir, NO_COLOR: "1" };
const port = 20000 + Math.floor(Math.random() * 20000);
const gw = spawn(
  process.execPath,
  [`${here}/dist/cli/main.js`, "gateway", "--port", String(port), "--config", gwConfig],
  {
    env: gwEnv,
    stdio: "ignore",
  },
);
for (let i = 0; ; i++) {
  const up = await fetch(`http://127.0.0.1:${port}/health`).then(
    (r) => r.ok,
    () => false,
  );
  if (up) break;
  if (i > 200) throw new Error("cli-ab: the gateway did not answer /health");
  await new Promise((r) => setTimeout(r, 50));
}
const url = `ws://127.0.0.1:${port}`;
const remote = {};
for (const [k, root] of Object.entries(trees)) {
  remote[k] = (s) =>
    run([`${root}/dist/cli/main.js`, "agent", "-m", "hello", "--url", url, "--config", gwConfig, "-s", s], gwEnv);
}
const bare = (s) => run([path.join(here, "bench/metrics/bare-remote-client.mjs"), url, s], {});

// unmeasured first runs: databases created, compile caches written
for (const k of Object.keys(trees)) {
  await local[k]("warm");
  await remote[k](`warm-${k}`);
}
const samples = { node: [], bare: [], localBefore: [], localAfter: [], remoteBefore: [], remoteAfter: [] };
for (let i = 0; i < n; i++) {
  samples.node.push(await run(["-e", "0"], {}));
  samples.bare.push(await bare(`bare-${i}`));
  for (const k of i % 2 ? ["after", "before"] : ["before", "after"]) {
    const side = k === "before" ? "Before" : "After";
    samples[`local${side}`].push(await local[k](`l-${i}`));
    samples[`remote${side}`].push(await remote[k](`r-${k}-${i}`));
  }
}
gw.kill("SIGTERM");
await model.close();
fs.rmSync(tmp, { recursive: true, force: true });

const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const of = (key, what) => median(samples[key].map((r) => r[what]));
const line = (label, key) => {
  const [m, c] = [of(key, "ms"), of(key, "cpu")];
  const wall = `${m.toFixed(1).padStart(7)} ms  ${(m / of("node", "ms")).toFixed(2)} ×`;
  return `${label.padEnd(34)} wall ${wall}   CPU ${c.toFixed(1).padStart(6)} ms  ${(c / of("node", "cpu")).toFixed(2)} ×`;
};
process.stdout.write(
  [
    `${n} rounds, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
    line("node -e 0", "node"),
    line("agent --local, before", "localBefore"),
    line("agent --local, after", "localAfter"),
    line("bare ws client (cli.remote.bare)", "bare"),
    line("agent --url, before", "remoteBefore"),
    line("agent --url, after", "remoteAfter"),
    "",
  ].join("\n"),
);
