// The streaming-at-scale figures (`--only=stream`): N concurrent runs, each streaming a long reply at a fixed token
// rate from stream-model.mjs (its own process), each read by a subscribed WebSocket client (client processes of
// their own). For each N: the gateway's CPU per streamed token, the wire bytes per token per subscriber, and the
// p99 lag from a token leaving the model to reaching its client, over a window in the middle of the streams. N
// grows until the gateway needs more than one core or the p99 lag passes 100 ms (bounded in time). A second
// phase streams whole short and long replies and divides each run's bytes by its tokens: that figure must not
// grow with the length of the reply.
import { execFileSync, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { BENCH_DIR } from "./child.mjs";
import { cpuMsOf, schedOf } from "./gateway.mjs";
import { startGatewayHost } from "./gateway-metrics.mjs";
import { median, round, wallMs } from "./stats.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A child that talks JSON lines: `line()` resolves with the next one, `send` writes a command to its stdin. */
export function lineChild(script, options, { verbose, timeoutMs }) {
  const child = spawn(process.execPath, [path.join(BENCH_DIR, script), JSON.stringify(options)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let buf = "";
  let stderr = "";
  const lines = [];
  const waiters = [];
  let exited = false;
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  child.stderr.setEncoding("utf8").on("data", (d) => {
    if (verbose) process.stderr.write(d);
    stderr = (stderr + d).slice(-3000);
  });
  child.stdout.setEncoding("utf8").on("data", (d) => {
    buf += d;
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      const text = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!text) continue;
      const w = waiters.shift();
      if (w) w.resolve(JSON.parse(text));
      else lines.push(JSON.parse(text));
    }
  });
  child.stdin.on("error", () => {});
  child.on("exit", (code, signal) => {
    exited = true;
    clearTimeout(timer);
    const why = new Error(`${script} exited ${code ?? signal}: ${stderr.trim().split("\n").slice(-5).join(" | ")}`);
    for (const w of waiters.splice(0)) w.reject(why);
  });
  return {
    pid: child.pid,
    line: () =>
      lines.length
        ? Promise.resolve(lines.shift())
        : exited
          ? Promise.reject(new Error(`${script} exited: ${stderr.trim().split("\n").slice(-5).join(" | ")}`))
          : new Promise((resolve, reject) => waiters.push({ resolve, reject })),
    send: (cmd) => child.stdin.write(`${cmd}\n`),
    stop: () => {
      clearTimeout(timer);
      if (!exited) child.kill("SIGKILL");
    },
  };
}

/**
 * --stream-pin: which CPUs a process of the level may run on. The process under test (gateway or relay) gets CPU 0
 * alone and the load (model, clients) every other CPU, so neither takes the other's core: the gateway's lag is then
 * what its own work on one core gives, not what it gets back from a machine the bench fills too. `-a`: every thread
 * the process has now; threads started later inherit their creator's mask.
 */
const GATEWAY_CPUS = "0";
const loadCpus = () => `1-${Math.max(1, os.cpus().length - 1)}`;
function pin(pid, cpus) {
  try {
    execFileSync("taskset", ["-a", "-pc", cpus, String(pid)], { stdio: "ignore" });
  } catch (err) {
    throw new Error(`--stream-pin: taskset could not pin process ${pid} to CPUs ${cpus}: ${err.message}`);
  }
}

/** p-th percentile of merged lag histograms ([bucket in ms, count] pairs, see stream-client.mjs), in ms. */
function histPercentile(hists, p) {
  const counts = new Map();
  for (const h of hists) for (const [b, c] of h) counts.set(b, (counts.get(b) ?? 0) + c);
  const buckets = [...counts].sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((n, [, c]) => n + c, 0);
  if (total === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (const [b, c] of buckets) {
    seen += c;
    if (seen >= rank) return b;
  }
  return Number.NaN;
}

/** Floor (s), the bare relay, with the gateway host's interface (url, pid, stop). */
async function startRelay(modelUrl, verbose) {
  const relay = lineChild("metrics/stream-relay.mjs", { baseUrl: modelUrl }, { verbose, timeoutMs: 300_000 });
  const { url } = await relay.line();
  const command = (cmd) => {
    relay.send(cmd);
    return relay.line();
  };
  const profile = async (file, load) => {
    await command(`profile ${file}`);
    try {
      return await load();
    } finally {
      await command("profile-stop");
    }
  };
  return { url, pid: relay.pid, command, profile, stop: async () => relay.stop() };
}

/** One level: `n` runs streaming at once; the figures of a window in the middle of their streams. */
export async function measureLevel({
  n,
  modelUrl,
  modelPid,
  epochMs,
  plan,
  verbose,
  progress,
  profileFile,
  allocFile,
  floor,
}) {
  const s = plan.stream;
  const gw = floor
    ? await startRelay(modelUrl, verbose)
    : await startGatewayHost(modelUrl, {
        verbose,
        agentDefaults: {
          maxConcurrent: n + 8,
          ...(s.coalesceMs !== undefined ? { streamCoalesceMs: s.coalesceMs } : {}),
        },
      });
  const procs = Math.min(4, Math.ceil(n / 500));
  const clients = [];
  try {
    if (s.pin) pin(gw.pid, GATEWAY_CPUS);
    for (let p = 0; p < procs; p++) {
      const runs = Math.floor(n / procs) + (p < n % procs ? 1 : 0);
      clients.push(
        lineChild(
          "metrics/stream-client.mjs",
          {
            mode: "window",
            url: gw.url,
            runs,
            tokens: s.tokens,
            rate: s.rate,
            epochMs,
            startSpreadMs: s.startSpreadMs,
            raw: floor === true,
          },
          { verbose, timeoutMs: 300_000 },
        ),
      );
      if (s.pin) pin(clients.at(-1).pid, loadCpus());
    }
    const readyFrom = wallMs();
    const ready = await Promise.all(clients.map((c) => c.line()));
    // how long until every run streamed its first token: connecting and starting N runs is work too
    const readyAfterMs = wallMs() - readyFrom;
    const failedEarly = ready.reduce((k, r) => k + r.failed, 0);
    if (failedEarly)
      throw new Error(`${failedEarly} runs failed before streaming: ${ready.flatMap((r) => r.failures)[0]}`);
    await sleep(s.warmupMs);
    let cpu0;
    let cpu1;
    let t0;
    let t1;
    // the other processes' CPU too: a lag the gateway did not cause shows up here (a starved model or client)
    const others = () => ({
      model: modelPid ? cpuMsOf(modelPid) : 0,
      clients: clients.reduce((k, c) => k + cpuMsOf(c.pid), 0),
    });
    let others0;
    let others1;
    let sched0;
    let sched1;
    let loop;
    const window = async () => {
      await gw.command("loop-start");
      others0 = others();
      cpu0 = cpuMsOf(gw.pid);
      sched0 = schedOf(gw.pid);
      t0 = wallMs();
      for (const c of clients) c.send("start");
      await sleep(s.windowMs);
      for (const c of clients) c.send("stop");
      cpu1 = cpuMsOf(gw.pid);
      sched1 = schedOf(gw.pid);
      t1 = wallMs();
      others1 = others();
      loop = await gw.command("loop-stop");
    };
    // under --profile the gateway is CPU-profiled during the window only (the profiler slows it down)
    if (profileFile) await gw.profile(profileFile, window);
    else if (allocFile) {
      // allocation sampling of the window (what each token allocates makes the young generation's collections)
      await gw.command(`heap-sample ${allocFile}`);
      try {
        await window();
      } finally {
        await gw.command("heap-stop");
      }
    } else await window();
    const results = await Promise.all(clients.map((c) => c.line()));
    const tokens = results.reduce((k, r) => k + r.tokens, 0);
    const bytes = results.reduce((k, r) => k + r.agentBytes + r.chatBytes, 0);
    const agentBytes = results.reduce((k, r) => k + r.agentBytes, 0);
    const gaps = results.reduce((k, r) => k + r.gaps, 0);
    const failed = results.reduce((k, r) => k + r.failed, 0);
    if (tokens === 0) {
      // on a machine this busy the last runs started after the first ones had ended: there was nothing to measure
      throw new Error(
        `no token streamed in the window: starting the ${n} runs took ${Math.round(readyAfterMs / 1000)} s, longer than a reply lasts (load ${os.loadavg()[0].toFixed(1)})`,
      );
    }
    const cpuMs = cpu1 - cpu0;
    const level = {
      n,
      ...(s.pin ? { pinned: { gateway: GATEWAY_CPUS, load: loadCpus() } } : {}),
      readyAfterMs: round(readyAfterMs, 0),
      windowMs: round(t1 - t0, 0),
      tokens,
      tokensPerRunPerSecond: round(tokens / n / ((t1 - t0) / 1000), 1),
      gatewayCores: round(cpuMs / (t1 - t0), 3),
      // where the gateway's CPU went (system time is mostly socket reads and writes) and how often it slept or was
      // preempted, per second: a gateway that wakes for every token pays the wake-up each time
      gatewaySched: {
        sysShare: round((sched1.sysMs - sched0.sysMs) / Math.max(1, cpuMs), 2),
        voluntaryPerS: round(((sched1.voluntary - sched0.voluntary) * 1000) / (t1 - t0), 0),
        involuntaryPerS: round(((sched1.involuntary - sched0.involuntary) * 1000) / (t1 - t0), 0),
        // system calls per token (/proc/<pid>/io): socket reads; socket writes plus the store's file writes
        readCallsPerToken: tokens ? round((sched1.readCalls - sched0.readCalls) / tokens, 3) : null,
        writeCallsPerToken: tokens ? round((sched1.writeCalls - sched0.writeCalls) / tokens, 3) : null,
      },
      modelCores: round((others1.model - others0.model) / (t1 - t0), 3),
      clientCores: round((others1.clients - others0.clients) / (t1 - t0), 3),
      loadavg: os.loadavg().map((l) => round(l, 2)),
      cpuUsPerToken: tokens ? round((cpuMs * 1000) / tokens, 1) : null,
      // one subscriber per run, so bytes per token per subscriber is bytes / tokens
      bytesPerToken: tokens ? round(bytes / tokens, 1) : null,
      agentBytesPerToken: tokens ? round(agentBytes / tokens, 1) : null,
      lagP50Ms: round(
        histPercentile(
          results.map((r) => r.lagHist),
          50,
        ),
        1,
      ),
      lagP99Ms: round(
        histPercentile(
          results.map((r) => r.lagHist),
          99,
        ),
        1,
      ),
      lagMaxMs: round(Math.max(...results.map((r) => r.lagMaxMs)), 1),
      seqGaps: gaps,
      failedRuns: failed,
      // the gateway's (or relay's) event loop during the window: a stall delays every stream at once
      loopDelayMs: loop?.loopDelayMs ?? null,
      ...(loop?.gc ? { gc: loop.gc } : {}),
    };
    // carried: every token delivered at the rate it was sent (a starved gateway uses less CPU by delivering less)
    level.withinCore =
      level.gatewayCores <= 1 && gaps === 0 && failed === 0 && level.tokensPerRunPerSecond >= 0.9 * s.rate;
    level.pass = level.withinCore && level.lagP99Ms <= 100;
    progress(
      `stream: N=${n}${floor ? " floor (s)" : ""}: gateway ${level.gatewayCores} cores (model ${level.modelCores}, clients ${level.clientCores}, load ${level.loadavg[0]}), ${level.cpuUsPerToken} µs/token, ${level.bytesPerToken} B/token, lag p50/p99 ${level.lagP50Ms}/${level.lagP99Ms} ms, sys ${level.gatewaySched.sysShare}, switches ${level.gatewaySched.voluntaryPerS}+${level.gatewaySched.involuntaryPerS}/s, syscalls/token read ${level.gatewaySched.readCallsPerToken} write ${level.gatewaySched.writeCallsPerToken}, loop delay p50/p99/max ${level.loopDelayMs?.p50}/${level.loopDelayMs?.p99}/${level.loopDelayMs?.max} ms${level.gc ? `, GC ${level.gc.ms} ms (max ${level.gc.maxMs})` : ""}, ${level.tokensPerRunPerSecond} tokens/s per run, all streaming after ${level.readyAfterMs} ms${s.pin ? `, pinned (CPU ${GATEWAY_CPUS} | load ${loadCpus()})` : ""} → ${level.pass ? "ok" : "over"}`,
    );
    return level;
  } finally {
    for (const c of clients) c.stop();
    await gw.stop();
  }
}

/** Floor (r): one process that only receives `n` streams (metrics/stream-receive.mjs); its CPU over the window. */
async function measureReceive({ n, modelUrl, plan, verbose }) {
  const s = plan.stream;
  const reader = lineChild(
    "metrics/stream-receive.mjs",
    {
      baseUrl: modelUrl,
      n,
      tokens: s.tokens,
      rate: s.rate,
      startSpreadMs: s.startSpreadMs,
      warmupMs: s.warmupMs,
      windowMs: s.windowMs,
    },
    { verbose, timeoutMs: 300_000 },
  );
  try {
    if (s.pin) pin(reader.pid, GATEWAY_CPUS);
    return await reader.line();
  } finally {
    reader.stop();
  }
}

/** Whole short and long replies: bytes per token of each run from its first event to its final. */
async function measureLengths({ modelUrl, epochMs, plan, verbose }) {
  const s = plan.stream;
  const gw = await startGatewayHost(modelUrl, { verbose, agentDefaults: { maxConcurrent: 64 } });
  try {
    const byLength = {};
    await Promise.all(
      [
        ["short", s.shortTokens],
        ["long", s.longTokens],
      ].map(async ([name, tokens]) => {
        const c = lineChild(
          "metrics/stream-client.mjs",
          { mode: "whole", url: gw.url, runs: s.lengthRuns, tokens, rate: s.rate, epochMs },
          { verbose, timeoutMs: 300_000 },
        );
        try {
          const r = await c.line();
          if (r.failed || r.gaps)
            throw new Error(`${name} replies: ${r.failed} failed, ${r.gaps} seq gaps ${r.failures}`);
          const per = (pick) => median(r.runs.map((x) => pick(x) / x.tokens));
          byLength[name] = {
            tokens,
            runs: r.runs.length,
            bytesPerToken: round(
              per((x) => x.agentBytes + x.chatBytes),
              1,
            ),
            agentBytesPerToken: round(
              per((x) => x.agentBytes),
              1,
            ),
            chatBytesPerToken: round(
              per((x) => x.chatBytes),
              1,
            ),
          };
        } finally {
          c.stop();
        }
      }),
    );
    return byLength;
  } finally {
    await gw.stop();
  }
}

export async function runStreamMetrics({ plan, verbose, progress, attempt }) {
  const s = plan.stream;
  const out = { levels: [] };
  const epochMs = Date.now();
  const model = lineChild("metrics/stream-model.mjs", { epochMs }, { verbose, timeoutMs: 900_000 });
  try {
    const { baseUrl } = await model.line();
    if (s.pin) pin(model.pid, loadCpus());
    progress(
      `stream: bytes per token of whole replies, ${s.lengthRuns} × ${s.shortTokens} and ${s.lengthRuns} × ${s.longTokens} tokens at ${s.rate} tokens/s`,
    );
    // --stream-n (fixedLevels) iterates on given levels: the whole-reply phase (about a minute) is left out
    const lengths = s.fixedLevels
      ? { error: "not measured (--stream-n)" }
      : await attempt("stream reply lengths", () => measureLengths({ modelUrl: baseUrl, epochMs, plan, verbose }));
    if (lengths.error) out.lengthError = lengths.error;
    else out.lengths = lengths;

    const began = Date.now();
    for (const n of s.levels) {
      if (!s.fixedLevels && Date.now() - began > s.searchBudgetMs) {
        progress(`stream: time budget of the search used up before N=${n}`);
        break;
      }
      progress(`stream: N=${n} runs × ${s.tokens} tokens at ${s.rate} tokens/s, window ${s.windowMs} ms`);
      const level = await attempt(`stream N=${n}`, () =>
        measureLevel({ n, modelUrl: baseUrl, modelPid: model.pid, epochMs, plan, verbose, progress }),
      );
      if (level.error) {
        out.levelError = level.error;
        break;
      }
      out.levels.push(level);
      // The lag also depends on everything else the machine runs; the gateway's own CPU does not. So the search
      // goes on past a level that missed only on lag, to find the largest N the gateway itself can carry too.
      if (!level.withinCore && !s.fixedLevels) break;
    }
    const passing = out.levels.filter((l) => l.pass);
    out.largestN = passing.length ? passing[passing.length - 1].n : undefined;
    const withinCore = out.levels.filter((l) => l.withinCore);
    out.largestNWithinCore = withinCore.length ? withinCore[withinCore.length - 1].n : undefined;
    // per-token figures of the largest passing level (else the largest within one core, else the first)
    out.reference = passing.at(-1) ?? withinCore.at(-1) ?? out.levels[0];
    if (out.reference) {
      const n = out.reference.n;
      progress(`stream: floor (s), a bare relay, at N=${n}`);
      const f = await attempt("stream floor (s)", () =>
        measureLevel({ n, modelUrl: baseUrl, modelPid: model.pid, epochMs, plan, verbose, progress, floor: true }),
      );
      if (f.error) out.floorError = f.error;
      else out.floor = f;
    }
    // The same relay at the largest N the gateway carried within one core (the search's widest level): whether a
    // process with no logic at all makes the lag target at that load on this machine, where the model and the
    // clients run too. When it does not, neither can any gateway that does at least what the relay does.
    const widest = out.levels.find((l) => l.n === out.largestNWithinCore);
    if (!widest) out.floorAtWidestError = "no level was carried within one core";
    else if (widest.n === out.reference?.n && out.floor) out.floorAtWidest = out.floor;
    else {
      progress(`stream: floor (s), a bare relay, at N=${widest.n} (the largest N carried within one core)`);
      const f = await attempt("stream floor (s) at the widest level", () =>
        measureLevel({
          n: widest.n,
          modelUrl: baseUrl,
          modelPid: model.pid,
          epochMs,
          plan,
          verbose,
          progress,
          floor: true,
        }),
      );
      if (f.error) out.floorAtWidestError = f.error;
      else out.floorAtWidest = f;
    }
    // Floor (r) at the same N: receiving the streams and nothing else, what any gateway pays first
    const receiveN = widest?.n ?? out.reference?.n;
    if (receiveN === undefined) out.receiveError = "no level was measured";
    else {
      progress(`stream: floor (r), receiving alone (raw sockets), at N=${receiveN}`);
      const r = await attempt("stream floor (r)", () =>
        measureReceive({ n: receiveN, modelUrl: baseUrl, plan, verbose }),
      );
      if (r.error) out.receiveError = r.error;
      else {
        out.receive = r;
        progress(
          `stream: N=${receiveN} floor (r): ${r.cores} cores, ${r.cpuUsPerToken} µs/token (${r.userUsPerToken} user), ${r.tokensPerRunPerSecond} tokens/s per run`,
        );
      }
    }
  } finally {
    model.stop();
  }
  // how run.mjs --profile re-runs the missed target: the first level that missed (else the largest), profiled
  const missedAt = out.levels.find((l) => !l.pass)?.n ?? out.levels.at(-1)?.n ?? s.levels[0];
  out.profilers = {
    "stream.maxN": async (dir) => {
      const m = lineChild("metrics/stream-model.mjs", { epochMs }, { verbose, timeoutMs: 300_000 });
      try {
        const { baseUrl } = await m.line();
        if (s.pin) pin(m.pid, loadCpus());
        const file = path.join(dir, `gateway-stream-${missedAt}.cpuprofile`);
        await measureLevel({
          n: missedAt,
          modelUrl: baseUrl,
          modelPid: m.pid,
          epochMs,
          plan,
          verbose,
          progress,
          profileFile: file,
        });
      } finally {
        m.stop();
      }
    },
  };
  return out;
}
