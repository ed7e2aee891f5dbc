// What NOTIFY costs at the bench's rates, seen from a LISTEN connection like each node's (storage/postgres/
// notifier.ts): one dedicated connection LISTENs on the deployment's channel and JSON-parses every notification, as
// a node's notifier does before its subscribers look at it; a second connection sends a probe notification carrying
// its send time every `probeEveryMs`, and the probe's arrival time on the listener is the LISTEN connection's lag
// under the load. Runs until stdin closes, then prints {notifications, seconds, perSecond, cpuUsPerNotification,
// lagMs: {p50, p99, max}, probes}. Options: { url, channel, probeEveryMs }.
import pg from "pg";
import { childOptions, emitResult } from "../lib/child.mjs";
import { percentile } from "../lib/stats.mjs";

const opts = childOptions();
const listener = new pg.Client({ connectionString: opts.url, application_name: "loopgate-bench-notify-probe" });
const sender = new pg.Client({ connectionString: opts.url, application_name: "loopgate-bench-notify-probe" });
await listener.connect();
await sender.connect();
let notifications = 0;
const lags = [];
listener.on("notification", (msg) => {
  notifications++;
  const p = JSON.parse(msg.payload ?? "{}");
  if (p.k === "probe") lags.push(performance.timeOrigin + performance.now() - p.at);
});
await listener.query(`LISTEN ${opts.channel}`);
process.stdout.write(`${JSON.stringify({ listening: true })}\n`);

const cpu0 = process.cpuUsage();
const t0 = performance.now();
let sending = false;
const timer = setInterval(() => {
  if (sending) return;
  sending = true;
  const payload = JSON.stringify({ k: "probe", at: performance.timeOrigin + performance.now() });
  sender.query("SELECT pg_notify($1, $2)", [opts.channel, payload]).finally(() => {
    sending = false;
  });
}, opts.probeEveryMs ?? 20);

const finish = async () => {
  clearInterval(timer);
  // the last probe's notification arrives after its commit
  await new Promise((r) => setTimeout(r, 200));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // the probes are this script's own: not counted as the nodes' notifications
  const nodes = notifications - lags.length;
  emitResult({
    notifications: nodes,
    seconds,
    perSecond: nodes / seconds,
    // includes the probes' own sending and receiving: an upper bound of what a node's notifier spends per notification
    cpuUsPerNotification: (cpu.user + cpu.system) / Math.max(1, notifications),
    lagMs: { p50: percentile(lags, 50), p99: percentile(lags, 99), max: Math.max(...lags) },
    probes: lags.length,
  });
  await listener.end();
  await sender.end();
  process.exit(0);
};
process.stdin.on("end", finish);
process.stdin.resume();
