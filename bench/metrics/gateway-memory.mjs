// Where a gateway's memory goes between turn 0 and turn 1,000 (100 sessions × 10 turns, as the gateway.rss row).
//   node bench/metrics/gateway-memory.mjs [dir] [--no-diff]   (after `npm run build`; starts its own fake model and gateway host)
// Prints, for a gateway host after its first turn and after the 1,000, RSS split into V8's heap (by space), external / array buffers and the rest
// (code, native: SQLite's page cache, malloc arenas), the RSS's anonymous / file-backed split from /proc, and the top
// of the heap diff by constructor (bench/lib/heap-diff.mjs) of snapshots a second host writes at the same two points
// (into dir, default a temporary one; both after a full GC).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runMetricChild, startFakeModelProcess } from "../lib/child.mjs";
import { rssOf } from "../lib/gateway.mjs";
import { startGatewayHost } from "../lib/gateway-metrics.mjs";
import { heapDiff } from "../lib/heap-diff.mjs";

// --no-diff: the split only (one gateway), for comparing settings
const noDiff = process.argv.includes("--no-diff");
const dir =
  process.argv.slice(2).find((a) => !a.startsWith("--")) ?? fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-gw-mem-"));
fs.mkdirSync(dir, { recursive: true });
const sessions = 100;
const turns = 10;
const MB = (b) => (b / 1e6).toFixed(1);

/** /proc/<pid>/status: resident anonymous, file-backed and shared memory. */
function rssParts(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k) => Number(status.match(new RegExp(`^${k}:\\s+(\\d+) kB`, "m"))?.[1] ?? 0) * 1024;
  return { anon: kb("RssAnon"), file: kb("RssFile"), shmem: kb("RssShmem") };
}

/**
 * /proc/<pid>/smaps, resident bytes by kind of mapping: the node binary and other files, the main malloc arena
 * ([heap]), glibc's per-thread malloc arenas (a 64 MB-aligned reservation of exactly 64 MB: a read-write part and
 * its PROT_NONE tail, which is how glibc makes them, unlike V8's 4 GB pointer cage), and other anonymous memory
 * (V8's heap pages, thread stacks, large malloc blocks that glibc mmaps on their own).
 */
function smapsParts(pid) {
  const maps = [];
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head)
      maps.push({ start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3], name: head[4], rss: 0 });
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && maps.length) maps[maps.length - 1].rss = Number(rss[1]) * 1024;
  }
  const ARENA = 64n << 20n;
  const out = { binaryAndFiles: 0, mainArena: 0, threadArenas: 0, threadArenaCount: 0, otherAnon: 0 };
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i];
    const next = maps[i + 1];
    const arena =
      m.start % ARENA === 0n &&
      m.perms.startsWith("rw") &&
      (m.end - m.start === ARENA ||
        (next?.start === m.end && next.perms.startsWith("---") && next.end === m.start + ARENA));
    if (m.name === "[heap]") out.mainArena += m.rss;
    else if (m.name.startsWith("/")) out.binaryAndFiles += m.rss;
    else if (arena) {
      out.threadArenas += m.rss;
      out.threadArenaCount++;
    } else out.otherAnon += m.rss;
  }
  return out;
}

function split(label, pid, heap) {
  const rss = rssOf(pid);
  const m = heap.mem;
  const parts = rssParts(pid);
  const maps = smapsParts(pid);
  const rest = rss - m.heapTotal - m.external;
  console.log(
    `${label}: RSS ${MB(rss)} MB (anon ${MB(parts.anon)}, file ${MB(parts.file)}, shmem ${MB(parts.shmem)}); ` +
      `V8 heap used ${MB(m.heapUsed)} / total ${MB(m.heapTotal)}; external ${MB(m.external)} ` +
      `(array buffers ${MB(m.arrayBuffers)}); rest ${MB(rest)}`,
  );
  console.log(
    `  mappings: files (node binary, libraries) ${MB(maps.binaryAndFiles)}, main malloc arena ${MB(maps.mainArena)}, ` +
      `${maps.threadArenaCount} thread malloc arenas ${MB(maps.threadArenas)}, other anonymous ${MB(maps.otherAnon)}`,
  );
  console.log(
    `  spaces (used/size MB): ${Object.entries(heap.spaces)
      .map(([k, v]) => `${k} ${MB(v.used)}/${MB(v.size)}`)
      .join(", ")}`,
  );
  return { rss, ...parts, ...maps, ...m, rest };
}

const model = await startFakeModelProcess();
const runTurns = (url, n, per) =>
  runMetricChild(
    "metrics/gateway-client.mjs",
    { mode: "throughput", url, sessions: n, turns: per, repeats: 1, warm: false },
    { timeoutMs: 600_000 },
  );
try {
  // 1. the split, on a gateway that writes no snapshot: writing one mallocs tens of MB that glibc keeps afterwards
  const host = await startGatewayHost(model.baseUrl, { execArgv: ["--expose-gc"] });
  try {
    console.log(`start: RSS ${MB(rssOf(host.pid))} MB`);
    // turn 0: one turn, so the code a turn runs is loaded and compiled before the first figure
    await runTurns(host.url, 1, 1);
    const before = split("after turn 0, after a GC", host.pid, await host.command("spaces"));
    await runTurns(host.url, sessions, turns);
    console.log(`after ${sessions * turns} turns, before any GC: RSS ${MB(rssOf(host.pid))} MB`);
    const after = split(`after ${sessions * turns} turns, after a GC`, host.pid, await host.command("spaces"));
    console.log(
      `growth: RSS ${MB(after.rss - before.rss)} MB, heap used ${MB(after.heapUsed - before.heapUsed)}, heap total ` +
        `${MB(after.heapTotal - before.heapTotal)}, external ${MB(after.external - before.external)}, rest ` +
        `${MB(after.rest - before.rest)}`,
    );
    // V8's memory reducer shrinks the young generation once allocation has been low for a while (no GC forced)
    await new Promise((r) => setTimeout(r, 15_000));
    split("15 s later, idle, no forced GC", host.pid, await host.command("spaces-nogc"));
  } finally {
    await host.stop();
  }
  // 2. the heap diff, on a second gateway doing the same turns
  if (!noDiff) {
    const snap = await startGatewayHost(model.baseUrl, { execArgv: ["--expose-gc"] });
    try {
      await runTurns(snap.url, 1, 1);
      await snap.command(`heap ${path.join(dir, "turn0.heapsnapshot")}`);
      await runTurns(snap.url, sessions, turns);
      await snap.command(`heap ${path.join(dir, "turn1000.heapsnapshot")}`);
    } finally {
      await snap.stop();
    }
    console.log(`heap diff, top 20 by bytes (turn 0 → turn ${sessions * turns}; snapshots in ${dir}):`);
    const diff = heapDiff(path.join(dir, "turn0.heapsnapshot"), path.join(dir, "turn1000.heapsnapshot"));
    for (const r of diff.slice(0, 20))
      console.log(`${String(r.bytes).padStart(10)} B ${String(r.count).padStart(8)}  ${r.name}`);
  }
} finally {
  await model.stop();
}
