// Memory per idle session. Runs with --expose-gc. Creates `sessions` sessions the way a user does (one real turn
// each, through AgentService, SQLite on), waits until all are idle, collects garbage, and divides what the process
// retained by the number of sessions. Options: { baseUrl, sessions, concurrency }.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import { parseConfig } from "../../dist/config/index.js";
import { createLogger } from "../../dist/infra/logger.js";
import { composeNode } from "../../dist/node/compose.js";
import { childOptions, emitResult, log } from "../lib/child.mjs";
import { benchConfig, noopTool } from "../lib/model.mjs";
import { nowMs } from "../lib/stats.mjs";

if (typeof globalThis.gc !== "function") throw new Error("run with --expose-gc");
const opts = childOptions();
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-idle-"));
const config = parseConfig(benchConfig(opts.baseUrl));
const node = await composeNode({ role: "bench", config, stateDir, logger: createLogger(), tools: [noopTool] });
const { service } = node;

let n = 0;
async function turn(sessionKey) {
  const accepted = await service.accept({ message: "hello", idempotencyKey: `idle-${n++}`, sessionKey });
  const final = await service.final(accepted.runId);
  if (final.status !== "ok") throw new Error(`turn failed: ${JSON.stringify(final)}`);
}

async function settle() {
  // let timers, sockets and finalizers run, then collect twice (the second pass frees what the first finalized)
  await new Promise((r) => setTimeout(r, 200));
  globalThis.gc();
  await new Promise((r) => setImmediate(r));
  globalThis.gc();
}

function memory() {
  const m = process.memoryUsage();
  return {
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    rss: m.rss,
  };
}

// Warm-up sessions that are not counted: the first turns load modules, open the provider, create the workspace,
// and V8 compiles and optimizes the code a session's first turn runs; that code (a few MB) is not per-session
// memory, so it must be in place before the "before" figure. Options: { warmup }.
const warmup = opts.warmup ?? 300;
let w = 0;
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (w < warmup) await turn(`warm-${w++}`);
  }),
);
await settle();
// heapSnapshots: a directory to write before/after snapshots to (compare with bench/lib/heap-diff.mjs)
if (opts.heapSnapshots) v8.writeHeapSnapshot(path.join(opts.heapSnapshots, "before.heapsnapshot"));
await settle();
const before = memory();

const total = opts.sessions ?? 10_000;
const concurrency = opts.concurrency ?? 16;
let next = 0;
const t0 = nowMs();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const i = next++;
      await turn(`idle-${i}`);
      if (i % 1000 === 999) log(`idle-sessions: ${i + 1}/${total}`);
    }
  }),
);
const seconds = (nowMs() - t0) / 1000;
await settle();
const after = memory();
if (opts.heapSnapshots) v8.writeHeapSnapshot(path.join(opts.heapSnapshots, "after.heapsnapshot"));

const per = (k) => (after[k] - before[k]) / total;
const result = {
  sessions: total,
  seconds,
  heapBytesPerSession: per("heapUsed"),
  externalBytesPerSession: per("external"),
  retainedBytesPerSession: per("heapUsed") + per("external"),
  rssBytesPerSession: per("rss"),
  busySessions: service.busySessionCount,
  before,
  after,
};
// the node writes what its audit ledger and run-event writer hold, then closes the store (node/compose.ts)
await node.close();
fs.rmSync(stateDir, { recursive: true, force: true });
emitResult(result);
