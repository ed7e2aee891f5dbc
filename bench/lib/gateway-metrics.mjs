// The gateway figures: warm turn latency and throughput against a gateway process, its RSS after 1000 turns,
// its start time, and `loopgate agent` through it. Loaded by run.mjs only once the gateway is built.
import { spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { GATEWAY_NODE_ENV, GATEWAY_NODE_FLAGS } from "../../dist/cli/gateway-flags.js";
import { BENCH_DIR, CLI, runMetricChild, timeProcess } from "./child.mjs";
import { cpuMsOf, peakRssOf, rssOf } from "./gateway.mjs";
import { prepareStateDir } from "./model.mjs";
import { median, nowMs } from "./stats.mjs";

/**
 * Starts bench/metrics/gateway-host.mjs; resolves once it listens. It runs under the Node flags and environment
 * `loopgate gateway` runs with (src/cli/gateway-flags.ts), so that the rows measure what users run; `nodeFlags` and
 * `nodeEnv` replace them (the flags experiment, bench/metrics/gateway-flags.mjs), `execArgv` and `env` add to them.
 */
export function startGatewayHost(
  baseUrl,
  {
    execArgv = [],
    nodeFlags = GATEWAY_NODE_FLAGS,
    nodeEnv = GATEWAY_NODE_ENV,
    env,
    stateDir,
    verbose = false,
    agentDefaults,
    postgres,
    metrics,
  } = {},
) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        ...nodeFlags,
        ...execArgv,
        path.join(BENCH_DIR, "metrics", "gateway-host.mjs"),
        JSON.stringify({ baseUrl, stateDir, agentDefaults, postgres, metrics }),
      ],
      { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...nodeEnv, ...env } },
    );
    // the gateway's log (lane wait warnings under load, ...) is shown with --verbose, and its tail on failure
    let log = "";
    child.stderr.setEncoding("utf8").on("data", (d) => {
      if (verbose) process.stderr.write(d);
      log = (log + d).slice(-4000);
    });
    const started = nowMs();
    let buf = "";
    const waiters = [];
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("gateway host did not listen within 20 s"));
    }, 20_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(
        new Error(`gateway host exited ${code} before listening: ${log.trim().split("\n").slice(-5).join(" | ")}`),
      );
    });
    let info;
    child.stdout.setEncoding("utf8").on("data", (d) => {
      buf += d;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (!info) {
          info = line;
          clearTimeout(timer);
          resolve({
            url: line.url,
            pid: child.pid,
            listenedAfterMs: nowMs() - started,
            memory: () =>
              new Promise((res) => {
                waiters.push(res);
                child.stdin.write("mem\n");
              }),
            /** Sends one stdin command of gateway-host.mjs and resolves with its answer line. */
            command: (cmd) =>
              new Promise((res) => {
                waiters.push(res);
                child.stdin.write(`${cmd}\n`);
              }),
            /** CPU-profiles the gateway while `load` runs (the inspector in the gateway process). */
            profile: async (file, load) => {
              await new Promise((res) => {
                waiters.push(res);
                child.stdin.write(`profile ${file}\n`);
              });
              try {
                return await load();
              } finally {
                await new Promise((res) => {
                  waiters.push(res);
                  child.stdin.write("profile-stop\n");
                });
              }
            },
            stop: () =>
              new Promise((done) => {
                if (child.exitCode !== null) return done();
                const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
                child.removeAllListeners("exit");
                child.once("exit", () => {
                  clearTimeout(kill);
                  done();
                });
                child.stdin.end();
              }),
          });
        } else waiters.shift()?.(line);
      }
    });
  });
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Polls GET /health until it answers 200; resolves with the ms since `since`. Bounded by timeoutMs. */
export async function waitForHealth(port, since, { timeoutMs = 20_000, child } = {}) {
  const deadline = nowMs() + timeoutMs;
  while (nowMs() < deadline) {
    if (child && child.exitCode !== null)
      throw new Error(`the gateway exited ${child.exitCode} before answering health`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      await res.arrayBuffer();
      if (res.ok) return nowMs() - since;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`no health answer within ${timeoutMs} ms`);
}

/** `loopgate gateway` in its own process, on a free port; resolves with the time until health answered. */
export async function startCliGateway({ configPath, env, execArgv = [] }) {
  const port = await freePort();
  const started = nowMs();
  const child = spawn(process.execPath, [...execArgv, CLI, "gateway", "--port", String(port), "--config", configPath], {
    stdio: ["ignore", "ignore", "pipe"],
    env,
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => {
    stderr += d;
  });
  const stop = () =>
    new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.once("exit", () => {
        clearTimeout(kill);
        done();
      });
      child.kill("SIGTERM");
    });
  try {
    const ms = await waitForHealth(port, started, { child });
    return { ms, port, url: `ws://127.0.0.1:${port}`, pid: child.pid, stop };
  } catch (err) {
    await stop();
    throw new Error(`${err.message}${stderr ? `: ${stderr.trim().slice(0, 300)}` : ""}`);
  }
}

export async function runGatewayMetrics({
  baseUrl,
  tmpRoot,
  plan,
  verbose,
  progress,
  attempt,
  nodeStart,
  startSamples,
}) {
  const out = {};
  const child = (timeoutMs) => ({ verbose, timeoutMs });

  // -- latency and 8×5 throughput against one gateway ----------------------------------------------------------
  progress("gateway: warm turn latency and 8 × 5 throughput");
  const host = await attempt("gateway host", () => startGatewayHost(baseUrl, { verbose }));
  if (host.error) {
    out.turnError = out.throughputError = out.rssError = host.error;
  } else {
    const rounds = [];
    for (let r = 0; r < plan.rounds; r++) {
      const cpu0 = cpuMsOf(host.pid);
      const res = await attempt("gateway latency", () =>
        runMetricChild(
          "metrics/gateway-client.mjs",
          { mode: "latency", url: host.url, turns: plan.turns, warmup: plan.warmup },
          child(300_000),
        ),
      );
      if (res.error) out.turnError = res.error;
      else {
        // the gateway's own CPU per turn (warm-up turns included): robust against other load on the machine
        res.gatewayCpuMsPerTurn = (cpuMsOf(host.pid) - cpu0) / (plan.turns + plan.warmup);
        rounds.push(res);
      }
    }
    out.latencyRounds = rounds;
    if (rounds.length) {
      out.turnP50 = median(rounds.map((r) => r.turnMs.p50));
      out.turnP99 = median(rounds.map((r) => r.turnMs.p99));
      out.gatewayCpuMsPerTurn = median(rounds.map((r) => r.gatewayCpuMsPerTurn));
    }
    const tp = await attempt("gateway throughput 8x5", () =>
      runMetricChild(
        "metrics/gateway-client.mjs",
        { mode: "throughput", url: host.url, sessions: 8, turns: 5, repeats: plan.gwThroughputRepeats },
        child(300_000),
      ),
    );
    if (tp.error) out.throughputError = tp.error;
    else out.throughput8x5 = tp.turnsPerSecond;
    out.throughput8x5Raw = tp;
    await host.stop();
  }

  // -- the same warm turn with gateway.metrics on and off, interleaved (issue 32: what /metrics costs a turn) ------
  progress("gateway: warm turn latency with /metrics off and on, interleaved");
  const off = await attempt("gateway host (metrics off)", () => startGatewayHost(baseUrl, { verbose }));
  const on = await attempt("gateway host (metrics on)", () => startGatewayHost(baseUrl, { verbose, metrics: true }));
  if (off.error || on.error) {
    out.metricsError = off.error ?? on.error;
  } else {
    const p50 = { off: [], on: [] };
    // the gateway's own CPU per turn: what metrics add to a turn, robust against the machine's other load
    const cpu = { off: [], on: [] };
    for (let r = 0; r < plan.rounds; r++) {
      // alternate which goes first, so a drift of the machine's load weighs on both alike
      for (const which of r % 2 === 0 ? ["off", "on"] : ["on", "off"]) {
        const h = which === "on" ? on : off;
        const cpu0 = cpuMsOf(h.pid);
        const res = await attempt(`gateway latency (metrics ${which})`, () =>
          runMetricChild(
            "metrics/gateway-client.mjs",
            { mode: "latency", url: h.url, turns: plan.turns, warmup: plan.warmup },
            child(300_000),
          ),
        );
        if (res.error) out.metricsError = res.error;
        else {
          p50[which].push(res.turnMs.p50);
          cpu[which].push((cpuMsOf(h.pid) - cpu0) / (plan.turns + plan.warmup));
        }
      }
    }
    out.metricsOffTurnP50Rounds = p50.off;
    out.metricsOnTurnP50Rounds = p50.on;
    out.metricsOffCpuMsPerTurnRounds = cpu.off;
    out.metricsOnCpuMsPerTurnRounds = cpu.on;
    if (p50.off.length && p50.on.length) {
      out.metricsOffTurnP50 = median(p50.off);
      out.metricsOnTurnP50 = median(p50.on);
      out.metricsOffCpuMsPerTurn = median(cpu.off);
      out.metricsOnCpuMsPerTurn = median(cpu.on);
    }
    // the metrics host counted what it ran: a scrape after the rounds (read by the report, not timed)
    const scrape = await attempt("gateway /metrics scrape", async () => {
      const res = await fetch(`${on.url.replace(/^ws:/, "http:")}/metrics`);
      const text = await res.text();
      return {
        status: res.status,
        bytes: text.length,
        runsOk: Number(/^loopgate_runs_total\{[^}]*status="ok"[^}]*\} (\S+)$/m.exec(text)?.[1]),
      };
    });
    out.metricsScrape = scrape;
  }
  await Promise.all([off.error ? undefined : off.stop(), on.error ? undefined : on.stop()]);

  // -- 100 sessions × 10 turns on a fresh gateway, then its RSS -------------------------------------------------
  const { sessions, turns } = plan.gwRss;
  progress(`gateway: ${sessions} sessions × ${turns} turns on a fresh gateway, then its RSS`);
  const fresh = await attempt("gateway host", () => startGatewayHost(baseUrl, { execArgv: ["--expose-gc"], verbose }));
  if (fresh.error) {
    out.rssError = fresh.error;
  } else {
    out.rssAtStartMB = rssOf(fresh.pid) / 1e6;
    const big = await attempt("gateway throughput 100x10", () =>
      runMetricChild(
        "metrics/gateway-client.mjs",
        { mode: "throughput", url: fresh.url, sessions, turns, repeats: 1, warm: false },
        child(600_000),
      ),
    );
    if (big.error) out.throughputError ??= big.error;
    else out.throughputBig = big.turnsPerSecond;
    if (big.error) out.rssError = big.error;
    else {
      // RSS as the operating system sees it, before anything (like a GC) could shrink it
      out.rssMB = rssOf(fresh.pid) / 1e6;
      out.peakRssMB = peakRssOf(fresh.pid) / 1e6;
      out.memoryAfterGc = await fresh.memory();
      out.rssAfterGcMB = rssOf(fresh.pid) / 1e6;
    }
    await fresh.stop();
  }

  // -- gateway start: `loopgate gateway` until /health answers; and startGateway in a bare script ---------------
  const dir = path.join(tmpRoot, "cli-gateway");
  const { configPath } = await prepareStateDir(dir, baseUrl);
  const env = { ...process.env, LOOPGATE_STATE_DIR: dir, NO_COLOR: "1" };
  progress(`gateway start: ${plan.spawns} starts of \`loopgate gateway\` and of a startGateway script`);
  const cliStarts = [];
  const scriptStarts = [];
  for (let i = 0; i < plan.spawns; i++) {
    startSamples.push(await nodeStart());
    if (!out.startError) {
      const gw = await attempt("`loopgate gateway`", () => startCliGateway({ configPath, env }));
      if (gw.error) out.startError = gw.error;
      else {
        cliStarts.push(gw.ms);
        await gw.stop();
      }
    }
    const started = nowMs();
    const h = await attempt("gateway host start", () => startGatewayHost(baseUrl, { verbose }));
    if (!h.error) {
      const port = Number(new URL(h.url).port);
      const ms = await attempt("gateway host health", () => waitForHealth(port, started));
      if (typeof ms === "number") scriptStarts.push(ms);
      await h.stop();
    }
  }
  out.startSamples = cliStarts;
  out.scriptStartSamples = scriptStarts;
  if (cliStarts.length) out.startMs = median(cliStarts);
  if (scriptStarts.length) out.scriptStartMs = median(scriptStarts);

  // -- `loopgate agent` through a running `loopgate gateway` ----------------------------------------------------
  progress(`\`loopgate agent\` through a running gateway: ${plan.spawns} runs`);
  const remote = await attempt("`loopgate gateway`", () => startCliGateway({ configPath, env }));
  if (remote.error) out.cliRemoteError = remote.error;
  else {
    const args = (s) => [CLI, "agent", "-m", "hello", "--url", remote.url, "--config", configPath, "-s", s];
    // the same connect + agent + wait by a bare `ws` client (bench/metrics/bare-remote-client.mjs): the lower bound
    const bareArgs = (s) => [path.join(BENCH_DIR, "metrics", "bare-remote-client.mjs"), remote.url, s];
    const samples = [];
    const bareSamples = [];
    const first = await timeProcess(process.execPath, args("bench-remote-warm"), { env });
    if (first.code !== 0)
      out.cliRemoteError = `loopgate agent exited ${first.code}: ${first.stderr.trim().slice(0, 300)}`;
    for (let i = 0; i < plan.spawns && !out.cliRemoteError; i++) {
      startSamples.push(await nodeStart());
      const r = await timeProcess(process.execPath, args(`bench-remote-${i}`), { env });
      if (r.code !== 0) out.cliRemoteError = `loopgate agent exited ${r.code}: ${r.stderr.trim().slice(0, 300)}`;
      else samples.push(r.ms);
      if (out.cliRemoteBareError) continue;
      const b = await timeProcess(process.execPath, bareArgs(`bench-bare-${i}`), { env });
      if (b.code !== 0) out.cliRemoteBareError = `the bare client exited ${b.code}: ${b.stderr.trim().slice(0, 300)}`;
      else bareSamples.push(b.ms);
    }
    out.cliRemoteSamples = samples;
    out.cliRemoteBareSamples = bareSamples;
    if (samples.length && !out.cliRemoteError) out.cliRemoteMs = median(samples);
    if (bareSamples.length && !out.cliRemoteBareError) out.cliRemoteBareMs = median(bareSamples);
    await remote.stop();
  }

  // -- how run.mjs --profile re-runs a missed gateway metric under the profiler ----------------------------------
  out.profilers = {
    "gateway.turn.p50": async (profDir, modelUrl) => {
      const turns = plan.turns;
      const floorFile = path.join(profDir, "floor.cpuprofile");
      const measuredFile = path.join(profDir, "gateway.cpuprofile");
      await runMetricChild(
        "metrics/floor-turn.mjs",
        { baseUrl: modelUrl, turns, warmup: plan.warmup, concurrentTurns: 0, profile: floorFile },
        child(300_000),
      );
      const h = await startGatewayHost(modelUrl, { verbose });
      try {
        // a first run warms the gateway up; the second, profiled, has as many turns as the floor's profile
        await runMetricChild(
          "metrics/gateway-client.mjs",
          { mode: "latency", url: h.url, turns: 30, warmup: 0 },
          child(300_000),
        );
        await h.profile(measuredFile, () =>
          runMetricChild(
            "metrics/gateway-client.mjs",
            { mode: "latency", url: h.url, turns, warmup: 0 },
            child(300_000),
          ),
        );
      } finally {
        await h.stop();
      }
      return {
        measured: measuredFile,
        floor: floorFile,
        units: turns,
        unit: "ms/turn, gateway process vs bare client",
      };
    },
    "gateway.throughput.8x5": async (profDir, modelUrl) => {
      const h = await startGatewayHost(modelUrl, { verbose });
      try {
        await runMetricChild(
          "metrics/gateway-client.mjs",
          { mode: "throughput", url: h.url, sessions: 8, turns: 5 },
          child(300_000),
        );
        await h.profile(path.join(profDir, "gateway-8x5.cpuprofile"), () =>
          runMetricChild(
            "metrics/gateway-client.mjs",
            { mode: "throughput", url: h.url, sessions: 8, turns: 5, repeats: 5 },
            child(300_000),
          ),
        );
      } finally {
        await h.stop();
      }
    },
    "gateway.start": async (profDir) => {
      const gw = await startCliGateway({ configPath, env, execArgv: ["--cpu-prof", `--cpu-prof-dir=${profDir}`] });
      await gw.stop();
    },
    "cli.remote": async (profDir) => {
      const gw = await startCliGateway({ configPath, env });
      try {
        const args = [
          "--cpu-prof",
          `--cpu-prof-dir=${profDir}`,
          CLI,
          "agent",
          "-m",
          "hello",
          "--url",
          gw.url,
          "--config",
          configPath,
          "-s",
          "bench-remote-profiled",
        ];
        await timeProcess(process.execPath, args, { env });
      } finally {
        await gw.stop();
      }
    },
  };
  return out;
}
