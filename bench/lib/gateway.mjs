// Whether the gateway and its client are built, so the gateway metrics can say "not available" with a reason
// instead of failing the run.
import fs from "node:fs";
import path from "node:path";
import { ROOT_DIR } from "./child.mjs";

export async function gatewayAvailability() {
  const server = path.join(ROOT_DIR, "dist", "gateway", "index.js");
  const client = path.join(ROOT_DIR, "dist", "client", "index.js");
  if (!fs.existsSync(server) || !fs.existsSync(client)) {
    return { ok: false, reason: "gateway not built (no dist/gateway/ or dist/client/; run `npm run build`)" };
  }
  try {
    const [g, c] = await Promise.all([import(server), import(client)]);
    if (typeof g.startGateway !== "function")
      return { ok: false, reason: "gateway not built: dist/gateway exports no startGateway" };
    if (typeof c.GatewayClient?.connect !== "function") {
      return { ok: false, reason: "gateway not built: dist/client exports no GatewayClient.connect" };
    }
  } catch (err) {
    return { ok: false, reason: `gateway not loadable: ${err.message.split("\n")[0]}` };
  }
  return { ok: true };
}

/** Resident set size of a process, from /proc (Linux), in bytes. */
export function rssOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(status.match(/^VmRSS:\s+(\d+)\s+kB/m)?.[1]);
  return kb * 1024;
}

/** Peak RSS (high-water mark) of a process, in bytes. */
export function peakRssOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(status.match(/^VmHWM:\s+(\d+)\s+kB/m)?.[1]);
  return kb * 1024;
}

/**
 * A process's user and system CPU time so far (ms, 10 ms resolution) and its context switches (voluntary: it waited
 * for I/O or a timer; involuntary: the machine had no core for it), from /proc (Linux).
 */
export function schedOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  // read and write system calls (writev and pwrite count as writes): per token, a count that does not move with load
  const io = fs.readFileSync(`/proc/${pid}/io`, "utf8");
  return {
    readCalls: Number(io.match(/^syscr:\s+(\d+)/m)?.[1] ?? 0),
    writeCalls: Number(io.match(/^syscw:\s+(\d+)/m)?.[1] ?? 0),
    userMs: Number(fields[11]) * 10,
    sysMs: Number(fields[12]) * 10,
    voluntary: Number(status.match(/^voluntary_ctxt_switches:\s+(\d+)/m)?.[1] ?? 0),
    involuntary: Number(status.match(/^nonvoluntary_ctxt_switches:\s+(\d+)/m)?.[1] ?? 0),
  };
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (Linux; 10 ms resolution). */
export function cpuMsOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15, in clock ticks (100 per second on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
