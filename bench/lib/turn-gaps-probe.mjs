// Where a warm turn WAITS, not where it computes. Loaded with `node --import` into a process that runs sequential
// turns of two model calls each (floor (a), the embedded turn, the gateway host), it marks each model call's
// request start, response headers and body end (node:http's and undici's diagnostics channels, so the floor's fetch
// and the providers' node:http are seen alike), with the event loop's idle time at each mark
// (performance.eventLoopUtilization: time spent waiting in the poll phase, i.e. for a socket, a timer or the thread
// pool), the main thread's CPU and the process's. Between two marks idle is a wait; wall − idle is the loop's own
// work plus time it was blocked outside the poll phase or waiting for a core (thread CPU tells them apart). At exit
// it writes, per segment of a turn, the median wall and idle, and per turn the means, to stderr (or to
// $TURN_GAPS_OUT as JSON):
//   between turns   from the previous turn's last body end to this turn's first request: the turn's tail and head
//                   (final, accept, lock, history, prompt) and, for the gateway, the client's round trip
//   call 1 / call 2 request → headers (the model's answer time, overlapped with whatever work the loop still has)
//                   and headers → body end
//   between calls   body end of call 1 → request of call 2: SSE fold, tool run, second request built
//   e.g. node --import ./bench/lib/turn-gaps-probe.mjs bench/metrics/embedded-turn.mjs '{"baseUrl": ...}'
// Only runs of whole sequential turns count (the floor's concurrent phase interleaves calls and is left out), and
// the first `TURN_GAPS_SKIP` turns (default 30: warmup) too.
import dc from "node:diagnostics_channel";
import fs from "node:fs";
import { performance } from "node:perf_hooks";

const marks = [];
/** the main thread's own CPU (µs → ms): wall − idle − CPU is time the thread was blocked in a system call outside
 * the poll phase (synchronous file I/O) or waiting for a core */
const threadCpuMs = () => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
/** every thread's CPU (GC helpers, the thread pool, the JIT's): what the bench's cpuMsPerTurn counts */
const processCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const mark = (name) => {
  const now = performance.now();
  marks.push(name, now, performance.eventLoopUtilization().idle, threadCpuMs(), processCpuMs());
};
dc.subscribe("http.client.request.start", () => mark("req"));
dc.subscribe("http.client.response.finish", ({ response }) => {
  mark("hdr");
  response.once("end", () => mark("end"));
});
dc.subscribe("undici:request:create", () => mark("req"));
dc.subscribe("undici:request:headers", () => mark("hdr"));
dc.subscribe("undici:request:trailers", () => mark("end"));

const SHAPE = ["req", "hdr", "end", "req", "hdr", "end"];
const SEGMENTS = ["between turns", "call 1 answer", "call 1 body", "between calls", "call 2 answer", "call 2 body"];

function sortedMedian(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Per turn: [wall, idle, thread CPU, process CPU] of each segment; a turn needs the previous turn's last mark to open it. */
function turnsOf(list) {
  const points = [];
  for (let i = 0; i < list.length; i += 5)
    points.push({ name: list[i], t: list[i + 1], idle: list[i + 2], cpu: list[i + 3], all: list[i + 4] });
  const turns = [];
  // the first turn has no previous body end to open its first segment: counted from the second on
  for (let i = SHAPE.length; i + SHAPE.length <= points.length; i += SHAPE.length) {
    if (!SHAPE.every((name, k) => points[i + k].name === name) || points[i - 1].name !== "end") break;
    const seg = [];
    for (let k = 0; k < SHAPE.length; k++) {
      const a = points[i + k - 1];
      const b = points[i + k];
      seg.push([b.t - a.t, b.idle - a.idle, b.cpu - a.cpu, b.all - a.all]);
    }
    turns.push(seg);
  }
  return turns;
}

process.on("exit", () => {
  const skip = Number(process.env.TURN_GAPS_SKIP ?? 30);
  const turns = turnsOf(marks).slice(skip);
  if (turns.length === 0) return;
  const rows = SEGMENTS.map((segment, k) => ({
    segment,
    wallMs: sortedMedian(turns.map((t) => t[k][0])),
    idleMs: sortedMedian(turns.map((t) => t[k][1])),
    cpuMs: sortedMedian(turns.map((t) => t[k][2])),
  }));
  const total = {
    wallMs: sortedMedian(turns.map((t) => t.reduce((s, x) => s + x[0], 0))),
    idleMs: sortedMedian(turns.map((t) => t.reduce((s, x) => s + x[1], 0))),
    cpuMs: sortedMedian(turns.map((t) => t.reduce((s, x) => s + x[2], 0))),
  };
  // means over the counted turns: the thread clocks tick too coarsely for a per-segment median
  const mean = (i) => turns.reduce((s, t) => s + t.reduce((u, x) => u + x[i], 0), 0) / turns.length;
  const means = { wallMs: mean(0), idleMs: mean(1), threadCpuMs: mean(2), processCpuMs: mean(3) };
  const result = { turns: turns.length, rows, total, means };
  if (process.env.TURN_GAPS_OUT) {
    fs.writeFileSync(process.env.TURN_GAPS_OUT, `${JSON.stringify(result)}\n`);
    return;
  }
  const line = (r) =>
    `${r.segment.padEnd(14)} wall ${r.wallMs.toFixed(3)} ms  idle ${r.idleMs.toFixed(3)} ms  thread CPU ${r.cpuMs.toFixed(3)} ms\n`;
  process.stderr.write(`turn gaps over ${turns.length} turns (medians)\n`);
  for (const r of rows) process.stderr.write(line(r));
  process.stderr.write(line({ segment: "whole turn", ...total }));
  const m = means;
  process.stderr.write(
    `means per turn: wall ${m.wallMs.toFixed(3)} ms, idle ${m.idleMs.toFixed(3)} ms, main thread CPU ${m.threadCpuMs.toFixed(3)} ms, process CPU ${m.processCpuMs.toFixed(3)} ms\n`,
  );
});
