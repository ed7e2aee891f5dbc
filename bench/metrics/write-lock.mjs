// Session write lock. Uncontended: acquire + release in one process, back to back, on one lock path.
// Handoff: a holder process releases while this process waits in acquire; the figure is the time from the
// holder's release (its wall clock, sub-ms) until the waiter holds the lock. Options: { iterations, handoffs, holdMs }.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { acquireSessionWriteLock } from "../../dist/session/write-lock.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { nowMs, summarize, wallMs } from "../lib/stats.mjs";

const opts = childOptions();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-lock-"));
const lockPath = path.join(dir, "session.lock");

for (let i = 0; i < 20; i++) await (await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 5000 })).release();
const uncontended = [];
const acquireOnly = [];
for (let i = 0; i < (opts.iterations ?? 500); i++) {
  const t0 = nowMs();
  const handle = await acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 5000 });
  const t1 = nowMs();
  await handle.release();
  uncontended.push((nowMs() - t0) * 1000);
  acquireOnly.push((t1 - t0) * 1000);
}

/** A holder process: takes the lock, says so, holds it for holdMs, releases, prints its release time. */
const holderScript = fileURLToPath(new URL("./write-lock-holder.mjs", import.meta.url));
function handoff(holdMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [holderScript, lockPath, String(holdMs)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    let waiting;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("write-lock holder did not finish within 20 s"));
    }, 20_000);
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      if (!waiting && out.includes("held\n")) {
        waiting = acquireSessionWriteLock(lockPath, { acquireTimeoutMs: 10_000 }).then((h) => ({
          at: wallMs(),
          h,
        }));
      }
    });
    child.on("close", async (code) => {
      clearTimeout(timer);
      if (code !== 0 || !waiting) {
        reject(new Error(`write-lock holder exited ${code}`));
        return;
      }
      const { at, h } = await waiting;
      await h.release();
      const released = Number(out.match(/released (\S+)/)?.[1]);
      resolve(at - released);
    });
  });
}

const handoffs = [];
for (let i = 0; i < (opts.handoffs ?? 10); i++) handoffs.push(await handoff(opts.holdMs ?? 100));

fs.rmSync(dir, { recursive: true, force: true });
emitResult({
  uncontendedUs: summarize(uncontended),
  acquireUs: summarize(acquireOnly),
  handoffMs: summarize(handoffs),
});
