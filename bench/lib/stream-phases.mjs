// Where a streamed token's CPU goes, from a .cpuprofile of the streaming window (bench/stream-profile.mjs keeps one of
// the gateway and one of the bare relay, floor (s), at the same N). Each sample counts for the innermost Loopgate (or
// relay) file on its stack, so node internals and npm packages count for the code that called them; samples with no
// such frame keep their package or VM state (socket reads run from the event loop: "node internals").
//   node bench/lib/stream-phases.mjs <gateway.cpuprofile> <tokens> [<relay.cpuprofile> <tokens>] [--files]
import fs from "node:fs";
import { phaseOf, profileIndex, shortUrl } from "./profile.mjs";

// first match wins, on "<file> <function>"
const PHASES = [
  ["(profiler)", /^bench\/lib\/inspector-profile\.mjs/],
  ["bench probes (loop probe, host)", /^bench\/(lib|metrics\/gateway-host)/],
  ["provider: HTTP body, SSE parse, chunk JSON", /^dist\/providers\//],
  ["stream beat (cadence)", /^dist\/infra\/cadence/],
  [
    "run: delta handling (coalescer, blocks, checkpoints, emitter)",
    /^dist\/agent\/run\/(delta-coalescer|block-chunker|text-checkpoint|events|reply-blocks|assistant-text|attempt|measured-provider|model-retry|fallback|turn|spans)/,
  ],
  ["bus", /^dist\/(infra\/(events|keyed-listeners|session-events)|events\/bus)/],
  ["event JSON", /^dist\/events\/event-json/],
  ["run-event store (writer + SQLite)", /^dist\/(events\/run-event-writer|storage\/)/],
  ["chat projection", /^dist\/gateway\/chat-projection/],
  ["broadcaster", /^dist\/gateway\/broadcast/],
  ["ws sends (connection + ws)", /^dist\/gateway\/connection/],
  ["other Loopgate", /^dist\//],
  ["relay: its own code (split, parse, frame)", /^bench\/metrics\/stream-relay/],
];

/** µs of CPU by phase (and by file), idle left out. */
export function streamPhases(profile) {
  const { byId, parent, self } = profileIndex(profile);
  const phases = new Map();
  const files = new Map();
  const add = (m, k, us) => m.set(k, (m.get(k) ?? 0) + us);
  for (const [id, us] of self) {
    const leaf = byId.get(id);
    if (leaf.callFrame.functionName === "(idle)") continue;
    let phase;
    let pkg;
    for (let n = id; n !== undefined && !phase; n = parent.get(n)) {
      const cf = byId.get(n).callFrame;
      const u = shortUrl(cf.url);
      phase = phaseOf(PHASES, u, cf.functionName);
      if (phase) add(files, `${u} ${cf.functionName || "(anonymous)"}`, us);
      else if (!pkg && u.includes("node_modules/"))
        pkg = `npm ${u.slice(u.lastIndexOf("node_modules/") + 13).split("/")[0]}`;
    }
    const vm = leaf.callFrame.functionName.startsWith("(") ? leaf.callFrame.functionName : "node internals";
    add(phases, phase ?? `no Loopgate frame: ${pkg ?? vm}`, us);
  }
  return { phases, files };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2).filter((a) => !a.startsWith("--"));
  const showFiles = process.argv.includes("--files");
  const [file, tokens, floorFile, floorTokens] = args;
  const a = streamPhases(JSON.parse(fs.readFileSync(file, "utf8")));
  const b = floorFile ? streamPhases(JSON.parse(fs.readFileSync(floorFile, "utf8"))) : undefined;
  const per = (us, n) => (us / Number(n)).toFixed(2);
  const keys = [...new Set([...a.phases.keys(), ...(b?.phases.keys() ?? [])])].sort(
    (x, y) => (a.phases.get(y) ?? 0) - (a.phases.get(x) ?? 0),
  );
  const total = (m) => [...m.values()].reduce((k, v) => k + v, 0);
  console.log(`| phase | gateway µs/token | ${b ? "relay µs/token |" : ""}`);
  console.log(`|---|---|${b ? "---|" : ""}`);
  for (const k of keys) {
    console.log(
      `| ${k} | ${per(a.phases.get(k) ?? 0, tokens)} | ${b ? `${per(b.phases.get(k) ?? 0, floorTokens)} |` : ""}`,
    );
  }
  console.log(
    `| **total** | **${per(total(a.phases), tokens)}** | ${b ? `**${per(total(b.phases), floorTokens)}** |` : ""}`,
  );
  if (showFiles) {
    for (const [name, r] of [["gateway", a], ...(b ? [["relay", b]] : [])]) {
      console.log(`\n${name}: by innermost Loopgate function, µs/token`);
      const n = name === "gateway" ? tokens : floorTokens;
      for (const [f, us] of [...r.files].sort((x, y) => y[1] - x[1]).slice(0, 30)) console.log(`  ${per(us, n)}  ${f}`);
    }
  }
}
