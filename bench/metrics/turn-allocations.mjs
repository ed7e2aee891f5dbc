// Bytes the gateway allocates per warm turn, by allocation site in Loopgate code: what a turn makes and throws away.
//   node bench/metrics/turn-allocations.mjs [turns=300] [top=25] [--keep=file.heapprofile]
// (after `npm run build`; starts its own fake model and gateway host). The bench's client runs 50 warm-up turns,
// then `turns` turns (sessions rotating every 10) under V8's allocation sampling in the gateway process, freed
// objects included (inspector-profile.mjs). Each sampled byte is counted for the innermost frame of the gateway's
// dist/ on its stack ("function file:line"), or for the innermost frame at all when no Loopgate frame is there.
// Sampling: figures below ~1 KB per turn are noise.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { GatewayClient } from "../../dist/client/index.js";
import { allocationSites } from "../lib/allocation-sites.mjs";
import { startFakeModelProcess } from "../lib/child.mjs";
import { startGatewayHost } from "../lib/gateway-metrics.mjs";

const args = process.argv.slice(2);
const positional = args.filter((a) => !a.startsWith("--"));
const turns = Number(positional[0] ?? 300);
const top = Number(positional[1] ?? 25);
const keep = args.find((a) => a.startsWith("--keep="))?.slice("--keep=".length);
const file = keep ?? path.join(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-alloc-")), "gateway.heapprofile");

const model = await startFakeModelProcess();
const host = await startGatewayHost(model.baseUrl);
try {
  const client = await GatewayClient.connect({ url: host.url });
  let n = 0;
  const turn = (i) =>
    client.agent({ message: "hello", idempotencyKey: `ta-${n++}`, sessionKey: `ta-${Math.floor(i / 10)}` });
  for (let i = 0; i < 50; i++) await turn(i);
  await host.command(`heap-sample ${file}`);
  for (let i = 50; i < 50 + turns; i++) await turn(i);
  await host.command("heap-stop");
  await client.close();
} finally {
  await host.stop();
  await model.stop();
}

const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const { sites, total } = allocationSites(profile);

console.log(`allocated per turn: ${(total / turns / 1024).toFixed(1)} KB (${turns} turns, sampled)`);
console.log("   KB/turn  share  site (innermost Loopgate frame)");
for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(
    `${(bytes / turns / 1024).toFixed(2).padStart(10)}  ${((100 * bytes) / total).toFixed(1).padStart(4)} %  ${site}`,
  );
}
if (!keep) fs.rmSync(path.dirname(file), { recursive: true, force: true });
