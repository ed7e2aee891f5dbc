// A gateway in its own process: startGateway with a node (role gateway, as `loopgate gateway` composes) whose runtime
// has the noop tool (the CLI cannot be given extra tools), SQLite on, the real openai-completions provider against
// the fake model process.
// Prints {"url", "pid"} once listening; closes the gateway and exits when its stdin closes.
// Options: { baseUrl, stateDir, agentDefaults, postgres, metrics } (agentDefaults: more `agents.defaults` keys, e.g.
// maxConcurrent; postgres: { url, schema } puts the store on Postgres, with the cluster node `loopgate gateway` builds
// there, so several hosts on one schema are the nodes of one cluster; metrics: true turns gateway.metrics on).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";
import { parseConfig } from "../../dist/config/index.js";
import { startGateway } from "../../dist/gateway/index.js";
import { createLogger } from "../../dist/infra/logger.js";
import { composeNode } from "../../dist/node/compose.js";
import { childOptions } from "../lib/child.mjs";
import { startHeapSampling, startProfile } from "../lib/inspector-profile.mjs";
import { benchConfig, noopTool } from "../lib/model.mjs";
import { startLoopProbe } from "../lib/stream-loop-probe.mjs";

const opts = childOptions();
// On Postgres, every transaction this process commits is counted (the driver's query method wrapped, where
// node-postgres sends from): all of them, and those with a write or a NOTIFY (each waits for a WAL flush). Read by
// the "pgstats" command. Per statement: a regex test and two counters.
const pgCount = { transactions: 0, writes: 0 };
if (opts.postgres) {
  const { default: pg } = await import("pg");
  const query = pg.Client.prototype.query;
  const open = new WeakMap();
  const WRITE = /\b(INSERT|UPDATE|DELETE)\b|pg_notify/i;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === "string" ? config : (config?.text ?? "");
    if (/^\s*BEGIN/i.test(text)) open.set(this, false);
    else if (/^\s*COMMIT/i.test(text)) {
      pgCount.transactions++;
      if (open.get(this)) pgCount.writes++;
      open.delete(this);
    } else if (/^\s*ROLLBACK/i.test(text)) open.delete(this);
    else if (open.has(this)) {
      if (WRITE.test(text)) open.set(this, true);
    } else if (!/^\s*(UN)?LISTEN/i.test(text)) {
      pgCount.transactions++;
      if (WRITE.test(text)) pgCount.writes++;
    }
    return query.call(this, config, ...rest);
  };
}
const stateDir = opts.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-gw-"));
const config = benchConfig(opts.baseUrl);
config.agents.defaults = { ...config.agents.defaults, ...opts.agentDefaults };
if (opts.postgres) config.storage = { backend: "postgres", postgres: opts.postgres };
if (opts.metrics) config.gateway = { metrics: { enabled: true } };
const parsed = parseConfig(config);
// on Postgres the node owns sessions by lease and follows the other hosts' runs, as `loopgate gateway`'s does
const node = await composeNode({
  role: "gateway",
  config: parsed,
  stateDir,
  logger: createLogger(),
  tools: [noopTool],
});
const gateway = await startGateway({ node, port: 0, host: "127.0.0.1" });
process.stdout.write(`${JSON.stringify({ url: gateway.url, pid: process.pid })}\n`);

let closing = false;
async function stop() {
  if (closing) return;
  closing = true;
  await gateway.close("bench done");
  await node.close();
  if (!opts.stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
  process.exit(0);
}
// Commands on stdin, one a line. "mem": answer with this process's memory split (heap, external, RSS), after a
// full GC if exposed. "heap <file>": write a heap snapshot there.
// "spaces" / "spaces-nogc": the memory split and V8's heap by space (after a full GC / without one).
// "profile <file>" / "profile-stop": CPU-profile just the load in between, not start-up. "heap-sample <file>" /
// "heap-stop": allocation sampling of the load in between.
// "loop-start" / "loop-stop": how late the event loop ran a 5 ms timer (stream-loop-probe.mjs) and the time spent
// in GC between the two, so a lag the gateway caused by stalling its loop shows apart from one the machine caused.
let input = "";
let stopProfile = async () => {};
let stopLoopProbe;
let gc = { ms: 0, count: 0, maxMs: 0 };
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.ms += e.duration;
    gc.count++;
    gc.maxMs = Math.max(gc.maxMs, e.duration);
  }
});
const answer = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
process.stdin.setEncoding("utf8").on("data", (d) => {
  input += d;
  for (let nl = input.indexOf("\n"); nl >= 0; nl = input.indexOf("\n")) {
    const line = input.slice(0, nl).trim();
    input = input.slice(nl + 1);
    if (line === "pgstats") {
      answer({ pg: { ...pgCount } });
    } else if (line === "mem") {
      globalThis.gc?.();
      void node.store
        .listSessions({ limit: 1e9 })
        .then((s) => answer({ mem: process.memoryUsage(), sessions: s.length }));
    } else if (line.startsWith("heap ")) {
      // a heap snapshot, to compare two with bench/lib/heap-diff.mjs
      globalThis.gc?.();
      v8.writeHeapSnapshot(line.slice("heap ".length));
      answer({ heap: true });
    } else if (line === "spaces" || line === "spaces-nogc") {
      // V8's heap by space beside the process's split, after a full GC unless told not to
      if (line === "spaces") globalThis.gc?.();
      const spaces = Object.fromEntries(
        v8.getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }]),
      );
      answer({ mem: process.memoryUsage(), spaces });
    } else if (line.startsWith("profile ")) {
      void startProfile(line.slice("profile ".length)).then((stopIt) => {
        stopProfile = stopIt;
        answer({ profiling: true });
      });
    } else if (line === "loop-start") {
      stopLoopProbe?.();
      stopLoopProbe = startLoopProbe();
      gc = { ms: 0, count: 0, maxMs: 0 };
      gcObserver.observe({ entryTypes: ["gc"] });
      answer({ loop: true });
    } else if (line === "loop-stop") {
      const loopDelayMs = stopLoopProbe?.() ?? null;
      stopLoopProbe = undefined;
      gcObserver.disconnect();
      answer({ loopDelayMs, gc: { ms: Math.round(gc.ms), count: gc.count, maxMs: Math.round(gc.maxMs * 10) / 10 } });
    } else if (line.startsWith("heap-sample-promoted ")) {
      // as "heap-sample", leaving out what the young generation's GC collected: what lived long enough to be
      // promoted to the old generation (what grows it between mark-compacts)
      void startHeapSampling(line.slice("heap-sample-promoted ".length), 4096, { minorGC: false }).then((stopIt) => {
        stopProfile = stopIt;
        answer({ sampling: true });
      });
    } else if (line.startsWith("heap-sample ")) {
      // "heap-sample <file>" / "heap-stop": allocation sampling of the load in between (metrics/turn-allocations.mjs)
      void startHeapSampling(line.slice("heap-sample ".length)).then((stopIt) => {
        stopProfile = stopIt;
        answer({ sampling: true });
      });
    } else if (line === "heap-stop") {
      void stopProfile().then(() => answer({ sampled: true }));
    } else if (line === "profile-stop") {
      void stopProfile().then(() => answer({ profiled: true }));
    }
  }
});
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.on("SIGTERM", stop);
