// What the gateway promotes to V8's old generation during the gateway.rss row's load, by allocation site: the bytes
// that live through two young-generation GCs (in-flight turn state under 100 concurrent sessions) and so grow the old
// space between mark-compacts, which V8 then keeps committed (bench/README.md, "rss2").
//   node bench/metrics/promoted-allocations.mjs [file.heapprofile] [top=25]   (after `npm run build`)
// Starts a fake model and a gateway host (the row's flags), one warm-up turn, then 100 sessions × 10 turns under V8's
// allocation sampling with what scavenges collected left out (gateway-host.mjs "heap-sample-promoted"). Each sampled
// byte counts for the innermost frame of the gateway's dist/ on its stack. Sampling: under ~0.2 KB per turn is noise.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { allocationSites } from "../lib/allocation-sites.mjs";
import { runMetricChild, startFakeModelProcess } from "../lib/child.mjs";
import { startGatewayHost } from "../lib/gateway-metrics.mjs";

const file =
  process.argv[2] ?? path.join(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-promoted-")), "gateway.heapprofile");
const top = Number(process.argv[3] ?? 25);
const sessions = 100;
const turns = 10;
const model = await startFakeModelProcess();
const host = await startGatewayHost(model.baseUrl);
const run = (n, per) =>
  runMetricChild(
    "metrics/gateway-client.mjs",
    { mode: "throughput", url: host.url, sessions: n, turns: per, repeats: 1, warm: false },
    { timeoutMs: 600_000 },
  );
try {
  await run(1, 1);
  await host.command(`heap-sample-promoted ${file}`);
  await run(sessions, turns);
  await host.command("heap-stop");
} finally {
  await host.stop();
  await model.stop();
}

const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const { sites, total } = allocationSites(profile);
const n = sessions * turns;
console.log(
  `promoted: ${(total / n / 1024).toFixed(1)} KB per turn, ${(total / 1e6).toFixed(1)} MB over ${n} turns (${file})`,
);
console.log(" KB/turn  share  site (innermost Loopgate frame)");
for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(
    `${(bytes / n / 1024).toFixed(2).padStart(8)} ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${site}`,
  );
