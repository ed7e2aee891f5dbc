// SQLite CPU per stored run event, by how many events each commit adds per streaming run: what the run-event writer's
// pace on SQLite (events/run-event-writer.ts `writePace`) trades. Streams `runs` runs' events into a fresh store, one
// commit per batch of `perRun` events of every run (interleaved by run, as a beat's events arrive), at most `cap` per
// commit; prints CPU µs and write system calls (/proc/self/io: the WAL's pwrites) per event over the last 3/4.
//   node bench/metrics/run-event-batches.mjs <runs> <perRun> <cap>     (needs `npm run build`)
//   e.g. 100 2 512 (the old 50 ms pace at 100 streams) against 100 8 2048 (200 ms)
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqliteStore } from "../../dist/storage/sqlite-store.js";

const [runs, perRun, cap] = process.argv.slice(2).map(Number);
if (!(runs > 0 && perRun > 0 && cap > 0)) {
  process.stderr.write("usage: run-event-batches.mjs <runs> <perRun> <cap>\n");
  process.exit(2);
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-run-events-"));
const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
const writeCalls = () => Number(fs.readFileSync("/proc/self/io", "utf8").match(/^syscw:\s+(\d+)/m)[1]);
try {
  const ids = Array.from({ length: runs }, () => randomUUID());
  const seq = new Array(runs).fill(0);
  // an assistant delta of two tokens, as the gateway stores it (its wire JSON)
  const json = JSON.stringify({
    runId: ids[0],
    seq: 1,
    stream: "assistant",
    ts: Date.now(),
    sessionKey: "agent:main:bench",
    data: { delta: " l2k4f l2k4h" },
  });
  const total = 200_000;
  let done = 0;
  let from;
  while (done < total) {
    const batch = [];
    for (let k = 0; k < perRun; k++) {
      for (let r = 0; r < runs; r++) {
        batch.push({
          runId: ids[r],
          seq: ++seq[r],
          ts: Date.now(),
          sessionKey: `agent:main:${r}`,
          stream: "assistant",
          json,
        });
      }
    }
    for (let i = 0; i < batch.length; i += cap) store.appendRunEvents(batch.slice(i, i + cap));
    done += batch.length;
    // the first quarter fills the index, so the measured part writes into a table of realistic size
    if (!from && done >= total / 4) from = { done, cpu: process.cpuUsage(), writes: writeCalls() };
  }
  const cpu = process.cpuUsage(from.cpu);
  const events = done - from.done;
  console.log(
    JSON.stringify({
      runs,
      perRun,
      cap,
      cpuUsPerEvent: Number(((cpu.user + cpu.system) / events).toFixed(2)),
      userUsPerEvent: Number((cpu.user / events).toFixed(2)),
      writeCallsPerEvent: Number(((writeCalls() - from.writes) / events).toFixed(2)),
    }),
  );
} finally {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
