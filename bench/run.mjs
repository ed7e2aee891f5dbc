// `npm run bench` — every Loopgate performance figure next to the floor it is judged against, measured in the
// same run, printed as a Markdown table and written to bench/results/latest.json.
//
//   npm run bench                      full run (a few minutes)
//   npm run bench -- --quick           short smoke run: every metric is produced, the figures mean little
//   npm run bench -- --only=embedded,cli-local   a subset (ids below)
//   npm run bench -- --only=postgres   SQLite 1 node vs Postgres 1/2/3 nodes (needs LOOPGATE_BENCH_POSTGRES_URL or
//                                      LOOPGATE_TEST_POSTGRES_URL; skipped with one line without)
//   npm run bench -- --only=postgres --paced-rate=8   the turns/s each node gets in the paced run (issue 33's
//                                      per-node CPU at equal load; default 3)
//   npm run bench -- --only=postgres --paced-profile   node 1 of each configuration under --cpu-prof during the
//                                      paced run, and what it spends more per turn at 3 nodes than at 1, by function
//                                      (profiles in bench/results/profiles/paced/; the CPU rows then include the profiler)
//   npm run bench -- --profile         afterwards, re-run each missed metric under --cpu-prof and print its
//                                      top self-time functions (profiles kept in bench/results/profiles/)
//   npm run bench -- --only=stream --stream-pin   the gateway on a core of its own, the model and clients on
//                                      the others (Linux, taskset)
//   npm run bench -- --verbose         pass the children's stderr through
//   npm run bench -- --out=<file>      write the JSON there (default bench/results/latest.json, and
//                                      bench/results/latest-quick.json for --quick so a smoke run never
//                                      overwrites the figures of a full run)
//
// Every metric runs in child processes (process start, RSS and heap figures must not pollute each other); the
// fake model runs in its own process, as a real model server would. Figures from a shared machine are noisy, so
// each latency is the median of several rounds and each round alternates the floor and the measured code.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BENCH_DIR, CLI, ROOT_DIR, runMetricChild, startFakeModelProcess, timeProcess } from "./lib/child.mjs";
import { gatewayAvailability } from "./lib/gateway.mjs";
import { prepareStateDir } from "./lib/model.mjs";
import { aggregateProfile, diffProfiles, formatDiff, formatProfile } from "./lib/profile.mjs";
import { median, round } from "./lib/stats.mjs";

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const quick = flag("quick");
const verbose = flag("verbose");
const wantProfile = flag("profile");
const only = option("only")?.split(",");
// --stream-n=1000[,1500]: measure only these N (each level, whatever the one before gave): to iterate on one level
const streamN = option("stream-n")
  ?.split(",")
  .map((n) => Number.parseInt(n, 10));
if (streamN?.some((n) => !(n > 0))) {
  process.stderr.write(
    `bench: --stream-n: expected positive integers separated by commas, got "${option("stream-n")}"\n`,
  );
  process.exit(2);
}
const pacedRate = option("paced-rate") === undefined ? undefined : Number(option("paced-rate"));
if (pacedRate !== undefined && !(pacedRate > 0)) {
  process.stderr.write(`bench: --paced-rate: expected a positive number of turns/s, got "${option("paced-rate")}"\n`);
  process.exit(2);
}
const outFile = path.resolve(
  option("out") ?? path.join(BENCH_DIR, "results", quick ? "latest-quick.json" : "latest.json"),
);

const GROUPS = [
  "floors",
  "embedded",
  "cli-local",
  "idle",
  "lock",
  "transcript",
  "sandbox",
  "gateway",
  "stream",
  "postgres",
];
if (only) {
  for (const id of only) {
    if (!GROUPS.includes(id)) {
      process.stderr.write(`bench: --only: unknown group "${id}"; groups: ${GROUPS.join(", ")}\n`);
      process.exit(2);
    }
  }
}
const runs = (group) => !only || only.includes(group);

/** How much work each metric does. --quick keeps every code path but only a few iterations. */
const plan = quick
  ? {
      rounds: 1,
      turns: 20,
      warmup: 5,
      floorConcurrentTurns: 5,
      spawns: 2,
      wsRounds: 200,
      idleSessions: 200,
      idleWarmup: 50,
      transcriptRows: 1000,
      lockIterations: 50,
      lockHandoffs: 2,
      sandboxExecs: 5,
      breakdownIterations: 10,
      gwThroughputRepeats: 1,
      gwBig: { sessions: 10, turns: 3 },
      gwRss: { sessions: 10, turns: 10 },
      postgres: {
        sessions: 6,
        turns: 2,
        repeats: 1,
        latencyTurns: 10,
        warmup: 3,
        commitProbes: 20,
        statsWaitMs: 1200,
        idleMs: 500,
        paced: { rate: 5, sessionsPerNode: 2, warmupTurns: 4, turns: 6, repeats: 1 },
      },
      stream: {
        levels: [5, 20],
        tokens: 400,
        rate: 50,
        startSpreadMs: 200,
        warmupMs: 500,
        windowMs: 1500,
        searchBudgetMs: 30_000,
        lengthRuns: 2,
        shortTokens: 20,
        longTokens: 100,
      },
    }
  : {
      rounds: 5,
      turns: 200,
      warmup: 30,
      floorConcurrentTurns: 20,
      spawns: 11,
      wsRounds: 1000,
      idleSessions: 10_000,
      idleWarmup: 300,
      transcriptRows: 10_000,
      lockIterations: 500,
      lockHandoffs: 10,
      sandboxExecs: 50,
      breakdownIterations: 100,
      gwThroughputRepeats: 5,
      gwBig: { sessions: 100, turns: 10 },
      gwRss: { sessions: 100, turns: 10 },
      // the same workload for SQLite 1 node and Postgres 1/2/3 nodes; 12 sessions spread evenly over 1, 2 or 3 nodes
      postgres: {
        sessions: 12,
        turns: 10,
        repeats: 3,
        latencyTurns: 100,
        warmup: 30,
        commitProbes: 200,
        statsWaitMs: 2500,
        // the same offered load on every node in every configuration (--paced-rate=R turns/s per node): 3 × R well
        // below the 1-node saturation throughput on this machine, so the ratio is not CPU contention. 3: at 8, with
        // other work on the machine (load 19-25), 45-96 % of turns started late and the run was closed-loop again
        paced: { rate: 3, sessionsPerNode: 4, warmupTurns: 40, turns: 160, repeats: 3 },
      },
      // streaming at scale: each run streams `tokens` at `rate` tokens/s; N grows through `levels` until a level
      // misses (gateway CPU > 1 core or p99 lag > 100 ms) or the search has used its time budget
      stream: {
        levels: [100, 250, 500, 1000, 1500, 2000, 3000],
        tokens: 2000,
        rate: 50,
        startSpreadMs: 2000,
        warmupMs: 4000,
        windowMs: 10_000,
        searchBudgetMs: 120_000,
        lengthRuns: 5,
        shortTokens: 200,
        longTokens: 2000,
      },
    };
if (pacedRate !== undefined) plan.postgres.paced.rate = pacedRate;
if (flag("paced-profile")) plan.postgres.pacedProfileDir = path.join(BENCH_DIR, "results", "profiles", "paced");

if (streamN) {
  plan.stream.levels = streamN;
  plan.stream.fixedLevels = true;
}
// --stream-coalesce-ms=0: the gateway's agents.defaults.streamCoalesceMs for the stream levels (default: the config's)
const coalesceMs = option("stream-coalesce-ms");
if (coalesceMs !== undefined) {
  if (!/^\d+$/.test(coalesceMs)) {
    process.stderr.write(`bench: --stream-coalesce-ms: expected a whole number of ms, got "${coalesceMs}"\n`);
    process.exit(2);
  }
  plan.stream.coalesceMs = Number(coalesceMs);
}

// --stream-pin: the gateway (or relay) on CPU 0, the model and the clients on the others (taskset), so the process
// under test has one core to itself and is judged on it alone (see bench/README.md, "Streaming at scale")
if (flag("stream-pin")) {
  if (os.cpus().length < 2) {
    process.stderr.write("bench: --stream-pin: needs at least 2 CPUs (one for the gateway, the rest for its load)\n");
    process.exit(2);
  }
  plan.stream.pin = true;
}

const progress = (msg) => process.stderr.write(`bench: ${msg}\n`);
const childOpts = (timeoutMs) => ({ verbose, timeoutMs });

const results = {
  date: new Date().toISOString(),
  quick,
  machine: {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: round(os.totalmem() / 2 ** 30, 1),
    node: process.version,
    platform: `${process.platform} ${os.release()}`,
    loadavgAtStart: os.loadavg().map((l) => round(l, 2)),
  },
  plan,
  raw: {},
  metrics: [],
  profiles: {},
};

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-"));
const model = await startFakeModelProcess();
progress(`fake model at ${model.baseUrl}; state under ${tmpRoot}${quick ? " (quick)" : ""}`);

/** A failed measurement becomes an explicit "not available" row with the reason, never a crash of the run. */
async function attempt(label, fn) {
  try {
    return await fn();
  } catch (err) {
    progress(`${label} failed: ${err.message.split("\n")[0]}`);
    return { error: `${label} failed: ${err.message.split("\n")[0]}` };
  }
}

// ---- floors ------------------------------------------------------------------------------------------------------

const floor = {};
if (runs("floors") || runs("embedded") || runs("gateway") || runs("cli-local")) {
  progress("floor (c): raw WebSocket round trip");
  const ws = await attempt("floor (c)", () =>
    runMetricChild("metrics/floor-ws.mjs", { rounds: plan.wsRounds }, childOpts(60_000)),
  );
  results.raw.floorWs = ws;
  floor.rpcMs = ws.rttMs?.p50;
}

/** node -e 0, spawned the same way as every CLI figure below. */
async function nodeStart() {
  const r = await timeProcess(process.execPath, ["-e", "0"]);
  return r.ms;
}

// ---- embedded turn (alternating with floor (a)) -------------------------------------------------------------------

const floorTurnRounds = [];
const embeddedRounds = [];
if (runs("floors") || runs("embedded") || runs("gateway")) {
  for (let r = 0; r < plan.rounds; r++) {
    progress(`round ${r + 1}/${plan.rounds}: floor (a) bare client${runs("embedded") ? ", then embedded turn" : ""}`);
    const f = await attempt("floor (a)", () =>
      runMetricChild(
        "metrics/floor-turn.mjs",
        {
          baseUrl: model.baseUrl,
          turns: plan.turns,
          warmup: plan.warmup,
          concurrency: 8,
          concurrentTurns: plan.floorConcurrentTurns,
        },
        childOpts(120_000),
      ),
    );
    floorTurnRounds.push(f);
    if (runs("embedded")) {
      embeddedRounds.push(
        await attempt("embedded turn", () =>
          runMetricChild(
            "metrics/embedded-turn.mjs",
            { baseUrl: model.baseUrl, turns: plan.turns, warmup: plan.warmup },
            childOpts(300_000),
          ),
        ),
      );
    }
  }
  results.raw.floorTurn = floorTurnRounds;
  results.raw.embedded = embeddedRounds;
}
if (runs("embedded")) {
  progress("embedded turn: where the time goes (each piece timed on its own)");
  results.breakdown = await attempt("embedded breakdown", () =>
    runMetricChild(
      "metrics/embedded-breakdown.mjs",
      { baseUrl: model.baseUrl, iterations: plan.breakdownIterations },
      childOpts(300_000),
    ),
  );
}
const medianOf = (rounds, pick) => {
  const values = rounds.map(pick).filter((v) => typeof v === "number" && Number.isFinite(v));
  return values.length ? median(values) : undefined;
};
floor.turnMs = medianOf(floorTurnRounds, (r) => r.turnMs?.p50);
floor.turnP99Ms = medianOf(floorTurnRounds, (r) => r.turnMs?.p99);
floor.throughput8 = medianOf(floorTurnRounds, (r) => r.throughput);
floor.cpuMsPerTurn = medianOf(floorTurnRounds, (r) => r.cpuMsPerTurn);

// ---- process-level: cold start floor, agent --local ------------------------------------------------------------

const startSamples = [];
const cliLocalSamples = [];
let cliLocalError;
if (runs("floors") || runs("cli-local") || runs("gateway")) {
  const dir = path.join(tmpRoot, "cli-local");
  const { configPath } = await prepareStateDir(dir, model.baseUrl);
  const env = { ...process.env, LOOPGATE_STATE_DIR: dir, NO_COLOR: "1" };
  const agentArgs = (i) => [CLI, "agent", "--local", "-m", "hello", "--config", configPath, "-s", `bench-cli-${i}`];
  if (runs("cli-local")) {
    // one unmeasured run creates the database and compiles nothing we keep: every measured run is a fresh process
    const first = await timeProcess(process.execPath, agentArgs("warm"), { env });
    if (first.code !== 0) cliLocalError = `agent --local exited ${first.code}: ${first.stderr.trim().slice(0, 300)}`;
  }
  progress(`floor (b) node -e 0${runs("cli-local") ? " and agent --local" : ""}: ${plan.spawns} spawns each`);
  for (let i = 0; i < plan.spawns; i++) {
    startSamples.push(await nodeStart());
    if (runs("cli-local") && !cliLocalError) {
      const r = await timeProcess(process.execPath, agentArgs(i), { env });
      if (r.code !== 0) cliLocalError = `agent --local exited ${r.code}: ${r.stderr.trim().slice(0, 300)}`;
      else cliLocalSamples.push(r.ms);
    }
  }
  results.raw.nodeStartMs = startSamples;
  results.raw.cliLocalMs = cliLocalSamples;
}
floor.startMs = startSamples.length ? median(startSamples) : undefined;

// ---- idle sessions, write lock, transcript ----------------------------------------------------------------------

let idle;
if (runs("idle")) {
  progress(`memory per idle session: ${plan.idleSessions} sessions, one turn each (child with --expose-gc)`);
  idle = await attempt("idle sessions", () =>
    runMetricChild(
      "metrics/idle-sessions.mjs",
      { baseUrl: model.baseUrl, sessions: plan.idleSessions, concurrency: 16, warmup: plan.idleWarmup },
      { ...childOpts(900_000), execArgv: ["--expose-gc"] },
    ),
  );
  results.raw.idle = idle;
}

let lock;
if (runs("lock")) {
  progress("session write lock: uncontended, and handoff between two processes");
  lock = await attempt("write lock", () =>
    runMetricChild(
      "metrics/write-lock.mjs",
      { iterations: plan.lockIterations, handoffs: plan.lockHandoffs, holdMs: 100 },
      childOpts(180_000),
    ),
  );
  results.raw.lock = lock;
}

let transcript;
if (runs("transcript")) {
  progress(`transcript append: ${plan.transcriptRows} rows`);
  transcript = await attempt("transcript", () =>
    runMetricChild("metrics/transcript.mjs", { rows: plan.transcriptRows }, childOpts(300_000)),
  );
  results.raw.transcript = transcript;
}

let sandboxExec;
if (runs("sandbox")) {
  progress(`sandboxed exec: ${plan.sandboxExecs} × exec true in bubblewrap, alternating with unsandboxed`);
  sandboxExec = await attempt("sandbox exec", () =>
    runMetricChild("metrics/sandbox-exec.mjs", { iterations: plan.sandboxExecs }, childOpts(180_000)),
  );
  results.raw.sandboxExec = sandboxExec;
}

// ---- gateway -----------------------------------------------------------------------------------------------------

let gateway = { unavailable: "not run (--only)" };
if (runs("gateway")) {
  const availability = await gatewayAvailability();
  if (!availability.ok) {
    gateway = { unavailable: availability.reason };
    progress(`gateway metrics: ${availability.reason}`);
  } else {
    const { runGatewayMetrics } = await import("./lib/gateway-metrics.mjs");
    gateway = await runGatewayMetrics({
      baseUrl: model.baseUrl,
      tmpRoot,
      plan,
      verbose,
      progress,
      attempt,
      nodeStart,
      startSamples,
    });
  }
  results.raw.gateway = gateway;
}
floor.startMs = startSamples.length ? median(startSamples) : undefined;

let stream = { unavailable: "not run (--only)" };
if (runs("stream")) {
  const availability = await gatewayAvailability();
  if (!availability.ok) {
    stream = { unavailable: availability.reason };
    progress(`stream metrics: ${availability.reason}`);
  } else {
    const { runStreamMetrics } = await import("./lib/stream-metrics.mjs");
    stream = await attempt("stream metrics", () => runStreamMetrics({ plan, verbose, progress, attempt }));
  }
  results.raw.stream = stream;
}

// ---- Postgres: SQLite 1 node vs Postgres 1/2/3 nodes ------------------------------------------------------------

let postgresRes = { unavailable: "not run (--only)" };
if (runs("postgres")) {
  const { benchPostgresUrl, runPostgresMetrics } = await import("./lib/postgres-metrics.mjs");
  const url = benchPostgresUrl();
  const availability = url ? await gatewayAvailability() : { ok: false };
  if (!url) {
    postgresRes = { unavailable: "no Postgres: set LOOPGATE_BENCH_POSTGRES_URL (or LOOPGATE_TEST_POSTGRES_URL)" };
    progress(`postgres metrics skipped: ${postgresRes.unavailable}`);
  } else if (!availability.ok) {
    postgresRes = { unavailable: availability.reason };
    progress(`postgres metrics: ${availability.reason}`);
  } else {
    postgresRes = await attempt("postgres metrics", () =>
      runPostgresMetrics({ url, baseUrl: model.baseUrl, plan, verbose, progress, attempt }),
    );
    if (postgresRes.error) postgresRes = { unavailable: postgresRes.error };
  }
  results.raw.postgres = postgresRes;
}

await model.stop();

// ---- the table ---------------------------------------------------------------------------------------------------

const rows = results.metrics;
/**
 * One table row. `value` undefined makes it "not available" with `reason`. `target` is { text, pass(value) } or
 * undefined for report-only rows. The ratio is value / floor.
 */
function row({ id, metric, value, unit, floorValue, floorName, target, reason, digits = 2 }) {
  const available = typeof value === "number" && Number.isFinite(value);
  const ratio = available && typeof floorValue === "number" && floorValue > 0 ? value / floorValue : undefined;
  rows.push({
    id,
    metric,
    unit,
    value: available ? round(value, digits) : null,
    notAvailable: available ? undefined : (reason ?? "not measured"),
    floor: typeof floorValue === "number" ? round(floorValue, digits) : null,
    floorName: floorName ?? null,
    ratio: ratio === undefined ? null : round(ratio, 2),
    target: target?.text ?? "report",
    pass: !available ? null : target ? target.pass(value) : null,
  });
}
const why = (r, fallback) => r?.error ?? r?.unavailable ?? fallback;

if (runs("floors") || runs("embedded") || runs("gateway")) {
  row({
    id: "floor.turn",
    metric: "floor (a): bare client turn, p50",
    value: floor.turnMs,
    unit: "ms",
    reason: why(floorTurnRounds[0]),
  });
  row({
    id: "floor.turn.p99",
    metric: "floor (a): bare client turn, p99",
    value: floor.turnP99Ms,
    unit: "ms",
    reason: why(floorTurnRounds[0]),
  });
  row({
    id: "floor.turn.cpu",
    metric: "floor (a): CPU per turn (client process)",
    value: floor.cpuMsPerTurn,
    unit: "ms",
    reason: why(floorTurnRounds[0]),
  });
  row({
    id: "floor.throughput",
    metric: "floor (a): bare clients, 8 at once",
    value: floor.throughput8,
    unit: "turns/s",
    digits: 0,
    reason: why(floorTurnRounds[0]),
  });
  row({
    id: "floor.rpc",
    metric: "floor (c): raw WebSocket round trip, p50",
    value: floor.rpcMs,
    unit: "ms",
    digits: 3,
    reason: why(results.raw.floorWs),
  });
}
if (runs("floors") || runs("cli-local") || runs("gateway")) {
  row({
    id: "floor.start",
    metric: "floor (b): `node -e 0` process start",
    value: floor.startMs,
    unit: "ms",
    digits: 1,
  });
}
if (runs("embedded")) {
  const p50 = medianOf(embeddedRounds, (r) => r.turnMs?.p50);
  const p99 = medianOf(embeddedRounds, (r) => r.turnMs?.p99);
  const reason = why(embeddedRounds.find((r) => r.error));
  row({
    id: "embedded.turn.p50",
    metric: "embedded warm turn, p50",
    value: p50,
    unit: "ms",
    floorValue: floor.turnMs,
    floorName: "a",
    target: { text: "≤ 1.5 × floor (a)", pass: (v) => v <= 1.5 * floor.turnMs },
    reason,
  });
  row({
    id: "embedded.turn.cpu",
    metric: "embedded turn, CPU per turn (less disturbed by other load than wall time)",
    value: medianOf(embeddedRounds, (r) => r.cpuMsPerTurn),
    unit: "ms",
    floorValue: floor.cpuMsPerTurn,
    floorName: "a CPU",
    reason,
  });
  row({
    id: "embedded.turn.p99",
    metric: "embedded warm turn, p99",
    value: p99,
    unit: "ms",
    floorValue: floor.turnP99Ms,
    floorName: "a p99",
    reason,
  });
}
if (runs("gateway")) {
  const g = gateway;
  const na = g.unavailable;
  row({
    id: "gateway.turn.p50",
    metric: "gateway warm turn (WS agent → final), p50",
    value: g.turnP50,
    unit: "ms",
    floorValue: floor.turnMs,
    floorName: "a",
    target: {
      text: "≤ 2 × floor (a) + floor (c)",
      pass: (v) => v <= 2 * floor.turnMs + floor.rpcMs,
    },
    reason: na ?? g.turnError,
  });
  row({
    id: "gateway.turn.p99",
    metric: "gateway warm turn, p99",
    value: g.turnP99,
    unit: "ms",
    floorValue: floor.turnP99Ms,
    floorName: "a p99",
    reason: na ?? g.turnError,
  });
  row({
    id: "gateway.turn.cpu",
    metric: "gateway warm turn, gateway process CPU per turn",
    value: g.gatewayCpuMsPerTurn,
    unit: "ms",
    floorValue: floor.cpuMsPerTurn,
    floorName: "a CPU",
    reason: na ?? g.turnError,
  });
  row({
    id: "gateway.turn.metrics.p50",
    metric: "gateway warm turn with gateway.metrics on, p50 (floor: the same turn with it off, interleaved)",
    value: g.metricsOnTurnP50,
    unit: "ms",
    floorValue: g.metricsOffTurnP50,
    floorName: "metrics off",
    reason: na ?? g.metricsError,
  });
  row({
    id: "gateway.turn.metrics.cpu",
    metric: "gateway warm turn with gateway.metrics on, gateway process CPU per turn (floor: with it off)",
    value: g.metricsOnCpuMsPerTurn,
    unit: "ms",
    floorValue: g.metricsOffCpuMsPerTurn,
    floorName: "metrics off",
    reason: na ?? g.metricsError,
  });
  row({
    id: "gateway.throughput.8x5",
    metric: "gateway throughput, 8 sessions × 5 turns",
    value: g.throughput8x5,
    unit: "turns/s",
    digits: 0,
    floorValue: floor.throughput8,
    floorName: "a ×8",
    target: { text: "≥ 300 turns/s", pass: (v) => v >= 300 },
    reason: na ?? g.throughputError,
  });
  row({
    id: "gateway.throughput.100x10",
    metric: `gateway throughput, ${plan.gwBig.sessions} sessions × ${plan.gwBig.turns} turns`,
    value: g.throughputBig,
    unit: "turns/s",
    digits: 0,
    floorValue: floor.throughput8,
    floorName: "a ×8",
    reason: na ?? g.throughputError,
  });
}
if (runs("cli-local")) {
  const v = cliLocalSamples.length ? median(cliLocalSamples) : undefined;
  row({
    id: "cli.local",
    metric: "`loopgate agent --local`, one turn, process start included",
    value: v,
    unit: "ms",
    digits: 0,
    floorValue: floor.startMs,
    floorName: "b",
    target: { text: "≤ 2.2 × floor (b)", pass: (x) => x <= 2.2 * floor.startMs },
    reason: cliLocalError,
  });
}
if (runs("gateway")) {
  const g = gateway;
  const na = g.unavailable;
  row({
    id: "cli.remote",
    metric: "`loopgate agent` through a running gateway, process start included",
    value: g.cliRemoteMs,
    unit: "ms",
    digits: 0,
    floorValue: floor.startMs,
    floorName: "b",
    target: { text: "≤ 1.5 × floor (b)", pass: (x) => x <= 1.5 * floor.startMs },
    reason: na ?? g.cliRemoteError,
  });
  row({
    id: "cli.remote.bare",
    metric: "the same connect + `agent` + wait by a bare `ws` client process (lower bound of cli.remote)",
    value: g.cliRemoteBareMs,
    unit: "ms",
    digits: 0,
    floorValue: floor.startMs,
    floorName: "b",
    reason: na ?? g.cliRemoteBareError,
  });
  row({
    id: "gateway.start",
    metric: "gateway start until it answers `health`",
    value: g.startMs,
    unit: "ms",
    digits: 0,
    floorValue: floor.startMs,
    floorName: "b",
    target: { text: "≤ 500 ms", pass: (x) => x <= 500 },
    reason: na ?? g.startError,
  });
  row({
    id: "gateway.start.script",
    metric: "gateway start until `health`, startGateway in a bare script (no CLI)",
    value: g.scriptStartMs,
    unit: "ms",
    digits: 0,
    floorValue: floor.startMs,
    floorName: "b",
    reason: na ?? "the gateway host script did not start",
  });
  row({
    id: "gateway.rss.start",
    metric: "gateway RSS at start, before any turn",
    value: g.rssAtStartMB,
    unit: "MB",
    digits: 1,
    reason: na ?? g.rssError,
  });
  row({
    id: "gateway.rss",
    metric: `gateway RSS after ${plan.gwRss.sessions * plan.gwRss.turns} turns over ${plan.gwRss.sessions} sessions`,
    value: g.rssMB,
    unit: "MB",
    digits: 1,
    target: { text: "≤ 150 MB", pass: (x) => x <= 150 },
    reason: na ?? g.rssError,
  });
}
if (runs("stream")) {
  const st = stream;
  const ref = st.reference;
  const na = st.unavailable ?? st.error;
  const at = ref ? ` (at N = ${ref.n})` : "";
  const levelWhy = na ?? st.levelError ?? "no level was measured";
  const tried = st.levels?.map((l) => l.n).join(", ");
  row({
    id: "stream.maxN",
    metric: `concurrent streams (${plan.stream.tokens} tokens at ${plan.stream.rate}/s each) with gateway CPU ≤ 1 core and p99 lag ≤ 100 ms${tried ? ` (tried ${tried})` : ""}${plan.stream.pin ? ", gateway pinned to a core of its own" : ""}`,
    // no level passed: the largest N is below the smallest tried, reported as 0
    value: st.levels?.length ? (st.largestN ?? 0) : undefined,
    unit: "streams",
    digits: 0,
    target: { text: "≥ 1,000", pass: (v) => v >= 1000 },
    reason: levelWhy,
  });
  row({
    id: "stream.maxN.cpu",
    metric:
      "concurrent streams carried at full rate with gateway CPU ≤ 1 core, whatever the lag (the lag depends on the machine's other load too)",
    value: st.levels?.length ? (st.largestNWithinCore ?? 0) : undefined,
    unit: "streams",
    digits: 0,
    reason: levelWhy,
  });
  row({
    id: "floor.stream",
    metric: `floor (s): bare relay (node:http + SSE split + one ws frame per token), CPU per token${at}`,
    value: st.floor?.cpuUsPerToken ?? undefined,
    unit: "µs",
    digits: 1,
    reason: na ?? st.floorError ?? levelWhy,
  });
  const fw = st.floorAtWidest;
  row({
    id: "floor.stream.widest",
    metric: `floor (s) at the largest N the gateway carried within one core${fw ? ` (N = ${fw.n}: relay ${fw.gatewayCores} cores, ${fw.cpuUsPerToken} µs/token)` : ""}: the bare relay's p99 lag, what this machine gives a process with no logic at that load`,
    value: fw?.lagP99Ms,
    unit: "ms",
    digits: 1,
    target: { text: "≤ 100 ms", pass: (v) => v <= 100 },
    reason: na ?? st.floorAtWidestError ?? levelWhy,
  });
  const rc = st.receive;
  row({
    id: "floor.stream.receive",
    metric: `floor (r): receiving alone, one process reading the model streams on raw sockets (no HTTP parser, no JSON, nothing sent)${rc ? ` at N = ${rc.n}: ${rc.cpuUsPerToken} µs/token` : ""}: cores it used, before any gateway work`,
    value: rc?.cores,
    unit: "cores",
    digits: 3,
    reason: na ?? st.receiveError ?? levelWhy,
  });
  row({
    id: "stream.cpu",
    metric: `gateway CPU per streamed token${at}`,
    value: ref?.cpuUsPerToken ?? undefined,
    unit: "µs",
    digits: 1,
    floorValue: st.floor?.cpuUsPerToken ?? undefined,
    floorName: "s",
    reason: levelWhy,
  });
  row({
    id: "stream.bytes",
    metric: `wire bytes per token per subscriber, agent + chat events${at}`,
    value: ref?.bytesPerToken ?? undefined,
    unit: "bytes",
    digits: 1,
    reason: levelWhy,
  });
  row({
    id: "stream.lag.p99",
    metric: `lag from a token leaving the model to reaching its client, p99${at}`,
    value: ref?.lagP99Ms,
    unit: "ms",
    digits: 1,
    target: { text: "≤ 100 ms", pass: (v) => v <= 100 },
    reason: levelWhy,
  });
  const L = st.lengths;
  const lenWhy = na ?? st.lengthError ?? "not measured";
  // the same two rows for each kind of event: a short reply's bytes per token, and a long one's against it
  for (const [idPart, kind, field] of [
    ["", "agent", "agentBytesPerToken"],
    [".chat", "chat", "chatBytesPerToken"],
  ]) {
    row({
      id: `stream.bytes${idPart}.short`,
      metric: `wire bytes per token, whole ${plan.stream.shortTokens}-token reply: ${kind} events`,
      value: L?.short?.[field],
      unit: "bytes",
      digits: 1,
      reason: lenWhy,
    });
    row({
      id: `stream.bytes${idPart}.long`,
      metric: `wire bytes per token, whole ${plan.stream.longTokens}-token reply: ${kind} events`,
      value: L?.long?.[field],
      unit: "bytes",
      digits: 1,
      floorValue: L?.short?.[field],
      floorName: "short reply",
      target: { text: "≤ 1.2 × short reply", pass: (v) => v <= 1.2 * L.short[field] },
      reason: lenWhy,
    });
  }
}
if (runs("idle")) {
  row({
    id: "idle.session",
    metric: `memory per idle session (${plan.idleSessions} sessions, retained JS heap + external)`,
    value: idle?.retainedBytesPerSession,
    unit: "bytes",
    digits: 0,
    target: { text: "≤ 2 KB", pass: (x) => x <= 2048 },
    reason: why(idle),
  });
  row({
    id: "idle.session.rss",
    metric: "memory per idle session, RSS growth (includes SQLite page cache, allocator)",
    value: idle?.rssBytesPerSession,
    unit: "bytes",
    digits: 0,
    reason: why(idle),
  });
}
if (runs("lock")) {
  row({
    id: "lock.uncontended",
    metric: "session write lock acquire + release, uncontended, p50",
    value: lock?.uncontendedUs?.p50,
    unit: "µs",
    digits: 0,
    reason: why(lock),
  });
  row({
    id: "lock.handoff",
    metric: "session write lock handoff between two processes, p50",
    value: lock?.handoffMs?.p50,
    unit: "ms",
    digits: 1,
    reason: why(lock),
  });
}
if (runs("sandbox")) {
  row({
    id: "sandbox.exec",
    metric: "exec of `true` in the bubblewrap sandbox vs unsandboxed (floor), p50",
    value: sandboxExec?.sandboxedMs?.p50,
    unit: "ms",
    floorValue: sandboxExec?.unsandboxedMs?.p50,
    floorName: "exec of `true` unsandboxed",
    digits: 1,
    reason: why(sandboxExec),
  });
}
if (runs("transcript")) {
  row({
    id: "transcript.append",
    metric: `transcript append, one row per call (${plan.transcriptRows} rows, one session)`,
    value: transcript?.single?.rowsPerSecond,
    unit: "rows/s",
    digits: 0,
    floorValue: transcript?.pieces?.insertInOwnTransaction?.rowsPerSecond,
    floorName: "raw INSERT + commit",
    reason: why(transcript),
  });
  row({
    id: "transcript.append.batched",
    metric: `transcript append, ${transcript?.batch ?? 100} rows per call`,
    value: transcript?.batched?.rowsPerSecond,
    unit: "rows/s",
    digits: 0,
    floorValue: transcript?.pieces?.insertOneTransaction?.rowsPerSecond,
    floorName: "raw INSERTs, one commit",
    reason: why(transcript),
  });
}

if (runs("postgres")) {
  const { postgresRows } = await import("./lib/postgres-metrics.mjs");
  postgresRows(postgresRes, row);
}

// ---- profiles of missed targets ------------------------------------------------------------------------------

/**
 * How to re-run a metric under the profiler. A profiler may return `{ measured, floor }` (.cpuprofile paths and
 * the units each covers): the report is then the per-unit difference, what the measured code spends that the
 * floor does not. Otherwise the largest .cpuprofile in the directory is the process under test.
 */
const profilers = {
  "embedded.turn.p50": async (dir) => {
    const turns = quick ? 30 : 300;
    const floorFile = path.join(dir, "floor.cpuprofile");
    const measuredFile = path.join(dir, "embedded.cpuprofile");
    await runMetricChild(
      "metrics/floor-turn.mjs",
      { baseUrl: profileModel.baseUrl, turns, warmup: plan.warmup, concurrentTurns: 0, profile: floorFile },
      childOpts(300_000),
    );
    await runMetricChild(
      "metrics/embedded-turn.mjs",
      { baseUrl: profileModel.baseUrl, turns, warmup: plan.warmup, profile: measuredFile },
      childOpts(300_000),
    );
    return { measured: measuredFile, floor: floorFile, units: turns, unit: "ms/turn" };
  },
  "cli.local": async (dir) => {
    const stateDir = path.join(tmpRoot, "cli-profile");
    const { configPath } = await prepareStateDir(stateDir, profileModel.baseUrl);
    const env = { ...process.env, LOOPGATE_STATE_DIR: stateDir, NO_COLOR: "1" };
    const args = (s) =>
      ["--cpu-prof", `--cpu-prof-dir=${dir}`, CLI, "agent", "--local", "-m", "hello"].concat([
        "--config",
        configPath,
        "-s",
        s,
      ]);
    await timeProcess(process.execPath, args("warm"), { env });
    for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f));
    await timeProcess(process.execPath, args("profiled"), { env });
  },
};
const top = (list, n) => list.slice(0, n).map((a) => ({ ...a, ms: round(a.ms, 2), share: round(a.share, 3) }));
let profileModel;
if (wantProfile) {
  const extra = { ...gateway.profilers, ...stream.profilers };
  const missed = rows.filter((r) => r.pass === false && (profilers[r.id] || extra[r.id]));
  if (missed.length) profileModel = await startFakeModelProcess();
  for (const r of missed) {
    const dir = path.join(BENCH_DIR, "results", "profiles", r.id);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    progress(`profiling ${r.id}`);
    const run = profilers[r.id] ?? ((d) => extra[r.id](d, profileModel.baseUrl));
    const outcome = await attempt(`profile ${r.id}`, () => run(dir));
    if (outcome?.error) continue;
    const load = (file) => aggregateProfile(JSON.parse(fs.readFileSync(file, "utf8")));
    if (outcome?.measured) {
      const m = load(outcome.measured);
      const f = load(outcome.floor);
      const owners = diffProfiles(m, outcome.units, f, outcome.units, "owners");
      const functions = diffProfiles(m, outcome.units, f, outcome.units, "functions");
      const pick = (rowsIn) =>
        rowsIn.slice(0, 30).map((x) => ({
          key: x.key,
          measured: round(x.measured, 3),
          floor: round(x.floor, 3),
          extra: round(x.diff, 3),
        }));
      results.profiles[r.id] = {
        files: [outcome.measured, outcome.floor].map((x) => path.relative(ROOT_DIR, x)),
        unit: outcome.unit,
        owners: pick(owners),
        functions: pick(functions),
      };
      process.stdout.write(
        `\n### profile: ${r.id}, measured vs floor, ${outcome.unit}\n\nBy the nearest Loopgate function on the stack:\n\n\`\`\`\n${formatDiff(owners, 30, outcome.unit)}\n\`\`\`\n\nBy function (self time):\n\n\`\`\`\n${formatDiff(functions, 30, outcome.unit)}\n\`\`\`\n`,
      );
      continue;
    }
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
    // the largest profile is the process under test (helpers, if any, profile too but do little)
    const biggest = files.map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
    if (!biggest) continue;
    const agg = load(biggest);
    results.profiles[r.id] = {
      file: path.relative(ROOT_DIR, biggest),
      totalMs: round(agg.totalMs, 0),
      areas: top(agg.areas, 15),
      owners: top(agg.owners, 25),
      functions: top(agg.functions, 25),
    };
    process.stdout.write(
      `\n### profile: ${r.id} (${path.relative(ROOT_DIR, biggest)})\n\n\`\`\`\n${formatProfile(agg, 20)}\n\`\`\`\n`,
    );
  }
  if (profileModel) await profileModel.stop();
}

// ---- output ------------------------------------------------------------------------------------------------------

const fmt = (v) => (v === null || v === undefined ? "—" : typeof v === "number" ? v.toLocaleString("en-US") : v);
const lines = [
  `Loopgate bench — ${results.date}${quick ? " — QUICK (smoke only; figures not meaningful)" : ""}`,
  `${results.machine.cpus} × ${results.machine.cpuModel}, ${results.machine.memoryGiB} GiB, Node ${results.machine.node}, load at start ${results.machine.loadavgAtStart.join(" ")}`,
  "",
  "| metric | value | floor | ratio to floor | target | pass |",
  "|---|---|---|---|---|---|",
];
for (const r of rows) {
  const value = r.value === null ? `not available: ${r.notAvailable}` : `${fmt(r.value)} ${r.unit}`;
  const floorText = r.floor === null ? "—" : `${fmt(r.floor)} (${r.floorName})`;
  const ratio = r.ratio === null ? "—" : `${r.ratio}×`;
  const pass = r.pass === null ? (r.target === "report" ? "report" : "n/a") : r.pass ? "PASS" : "FAIL";
  lines.push(`| ${r.metric} | ${value} | ${floorText} | ${ratio} | ${r.target} | ${pass} |`);
}
const b = results.breakdown;
if (b?.ms) {
  const labels = {
    wholeTurn: "whole turn (accept → final)",
    modelCalls: "the two model calls (openai-completions provider: node:http + SSE)",
    writeLock: "session write lock acquire + release",
    bootstrapFiles: "bootstrap files, uncached read (the runner re-reads only changed files)",
    storeCalls: "store calls of one turn",
    systemPrompt: "system prompt build",
    noopTool: "noop tool",
  };
  lines.push(
    "",
    "Where an embedded turn's time goes (each piece timed on its own in one warm process; medians):",
    "",
    "| piece | ms | share of the turn |",
    "|---|---|---|",
  );
  for (const [k, label] of Object.entries(labels)) {
    const ms = b.ms[k];
    lines.push(
      `| ${label} | ${round(ms, 3)} | ${k === "wholeTurn" ? "100%" : `${round((100 * ms) / b.ms.wholeTurn, 1)}%`} |`,
    );
  }
  lines.push(
    `| rest (scheduling, events, awaits, GC) | ${round(b.restMs, 3)} | ${round((100 * b.restMs) / b.ms.wholeTurn, 1)}% |`,
  );
  if (typeof floor.turnMs === "number") lines.push(`| floor (a) for comparison | ${round(floor.turnMs, 3)} | |`);
}
const t = results.raw.transcript;
if (t?.pieces) {
  const us = (x) => round(x.usPerRow, 1);
  const commit = t.pieces.insertInOwnTransaction.usPerRow - t.pieces.insertOneTransaction.usPerRow;
  const known = t.pieces.insertInOwnTransaction.usPerRow + t.pieces.lookups.usPerRow + t.pieces.serialize.usPerRow;
  lines.push(
    "",
    "Where a transcript append's time goes (µs per row, one row per appendTranscript call):",
    "",
    "| piece | µs/row |",
    "|---|---|",
    `| appendTranscript, one row per call | ${us(t.single)} |`,
    `| commit of its own transaction (raw INSERT in own transaction − raw INSERTs in one transaction) | ${round(commit, 1)} |`,
    `| the INSERT itself (many rows, one transaction) | ${us(t.pieces.insertOneTransaction)} |`,
    `| the two lookups before it (generation, max(seq)) | ${us(t.pieces.lookups)} |`,
    `| JSON.stringify of the message | ${us(t.pieces.serialize)} |`,
    `| building a new db.transaction(fn) wrapper per call (what SqliteStore.transaction did before it kept one runner), empty | ${us(t.pieces.emptyTransactionBuiltPerCall)} |`,
    `| the same with a wrapper built once | ${us(t.pieces.emptyTransaction)} |`,
    `| whole minus the sum of the pieces (the pieces are timed separately, so this is noise-sized and may be negative) | ${round(t.single.usPerRow - known - (t.pieces.emptyTransactionBuiltPerCall.usPerRow - t.pieces.emptyTransaction.usPerRow), 1)} |`,
    `| for comparison: 100 rows per call | ${us(t.batched)} |`,
  );
}
if (runs("postgres")) {
  const { postgresScalingLines } = await import("./lib/postgres-metrics.mjs");
  lines.push(...postgresScalingLines(postgresRes));
}
process.stdout.write(`\n${lines.join("\n")}\n`);
results.table = lines.join("\n");

fs.mkdirSync(path.dirname(outFile), { recursive: true });
fs.writeFileSync(outFile, `${JSON.stringify(results, null, 2)}\n`);
fs.rmSync(tmpRoot, { recursive: true, force: true });
progress(`wrote ${path.relative(ROOT_DIR, outFile)}`);
