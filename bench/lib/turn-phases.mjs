// A warm turn's CPU split by phase, from a .cpuprofile of many turns (what `npm run bench -- --profile` keeps for
// embedded.turn.p50 and gateway.turn.p50). Each sample counts for the innermost Loopgate file on its stack (so node
// internals, npm packages and native calls count for the Loopgate code that asked for them), and that file's phase
// comes from the table below. Samples with no Loopgate frame keep their VM state or their package.
//   node bench/lib/turn-phases.mjs <measured.cpuprofile> <turns> [<floor.cpuprofile> <floor turns>] [--files]
import fs from "node:fs";
import { phaseOf, profileIndex, shortUrl } from "./profile.mjs";

// first match wins: the phase of "<file> <function>" for a dist/ (or bench/) frame
const PHASES = [
  ["(profiler: the bench's inspector session)", /^bench\/lib\/inspector-profile\.mjs/],
  // a connection's outbound side: every frame (events, and the RPC replies) is written corked, flushed on nextTick
  [
    "events / broadcast (incl. outbound WS frames)",
    /^dist\/gateway\/connection\.js (sendEventJson|sendText|coalesce|queuedBytes|armSlowReaderCheck|\(anonymous\))$/,
  ],
  ["session write lock (lock file)", /^dist\/session\/(write-lock|file-lock)/],
  [
    "intake (RPC, queue, accept)",
    /^dist\/(gateway\/(connection|server|access|auth|methods|message-limit|backpressure|preauth|connection-caps|context|services)|queue\/(intake|lanes|session-queue|modes|debounce|collect|in-band|user-content|live-runs)|agent\/(service|session-service)|cluster\/intake|protocol\/|client\/)/,
  ],
  [
    "prepare / profile",
    /^dist\/(agent\/(run\/(prepare|context-|token-estimate|compaction|truncate|summarize|commands|control|ports|spec)|profile\/|runtime|history-cache|enabled-overrides|shared-settings|stored-)|config\/|session\/|limits\/|hooks\/)/,
  ],
  ["prompt assembly", /^dist\/prompt\//],
  ["model call + SSE parse", /^dist\/(providers\/|agent\/run\/(attempt|measured-provider|model-retry|fallback))/],
  ["tool call", /^(dist\/tools\/|bench\/lib\/model\.mjs)/],
  ["transcript / store write", /^dist\/storage\//],
  [
    "events / broadcast (incl. outbound WS frames)",
    /^dist\/(events\/|gateway\/(broadcast|chat-projection|run-log)|agent\/run\/(events|delta-coalescer|projection|text-checkpoint|reply-blocks|block-chunker|spans)|metrics\/)/,
  ],
  [
    "finish (reply, result, final)",
    /^dist\/(agent\/(run\/finish|reply|silent-prefix)|queue\/(finals|turn|next-turn|remote-end))/,
  ],
  ["run loop (turn, execute, loop)", /^dist\/agent\/(loop|run\/(turn|execute|index|tool-summaries|errors))/],
  ["bench driver", /^bench\//],
  ["other Loopgate", /^dist\//],
];

/** ms per turn by phase (and by Loopgate file, for --files), idle time left out. */
export function turnPhases(profile, turns) {
  const { byId, parent, self } = profileIndex(profile);
  const phases = new Map();
  const files = new Map();
  const leaves = new Map(); // phase -> Map(leaf function -> us)
  const add = (m, k, us) => m.set(k, (m.get(k) ?? 0) + us);
  for (const [id, us] of self) {
    const leaf = byId.get(id);
    if (leaf.callFrame.functionName === "(idle)") continue;
    let phase;
    let pkg;
    for (let n = id; n !== undefined && !phase; n = parent.get(n)) {
      const cf = byId.get(n).callFrame;
      const u = shortUrl(cf.url);
      const p = phaseOf(PHASES, u, cf.functionName);
      if (p) {
        phase = p;
        add(files, u, us);
      } else if (!pkg && u.includes("node_modules/"))
        pkg = `npm ${u.slice(u.lastIndexOf("node_modules/") + 13).split("/")[0]}`;
    }
    const vm = leaf.callFrame.functionName.startsWith("(") ? leaf.callFrame.functionName : "node internals";
    const key = phase ?? `no Loopgate frame: ${pkg ?? vm}`;
    add(phases, key, us);
    const cf = leaf.callFrame;
    if (!leaves.has(key)) leaves.set(key, new Map());
    add(
      leaves.get(key),
      `${cf.functionName || "(anonymous)"}${cf.url ? ` ${shortUrl(cf.url).replace(/^.*node_modules\//, "")}` : ""}`,
      us,
    );
  }
  const rank = (m) => [...m].sort((a, b) => b[1] - a[1]).map(([key, us]) => ({ key, msPerTurn: us / 1000 / turns }));
  const phaseRows = rank(phases).map((r) => ({ ...r, top: rank(leaves.get(r.key)).slice(0, 4) }));
  return { phases: phaseRows, files: rank(files) };
}

if (process.argv[1]?.endsWith("turn-phases.mjs")) {
  const [file, turns, floorFile, floorTurns] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
  if (!file || !(Number(turns) > 0)) {
    process.stderr.write(
      "usage: node bench/lib/turn-phases.mjs <measured.cpuprofile> <turns> [<floor.cpuprofile> <turns>] [--files] [--leaves]\n",
    );
    process.exit(2);
  }
  const load = (f) => JSON.parse(fs.readFileSync(f, "utf8"));
  // the profiler's own work is in both profiles and in neither figure the bench reports: left out of the totals
  const counted = (rows) => rows.filter((r) => !r.key.startsWith("(profiler"));
  const sum = (rows) => counted(rows).reduce((s, r) => s + r.msPerTurn, 0);
  const show = (title, rows) => {
    const total = sum(rows);
    process.stdout.write(`${title}: ${total.toFixed(3)} CPU ms per turn (idle and the profiler left out)\n`);
    for (const r of counted(rows)) {
      process.stdout.write(
        `${r.msPerTurn.toFixed(3).padStart(8)} ${((100 * r.msPerTurn) / total).toFixed(1).padStart(5)} %  ${r.key}\n`,
      );
      if (process.argv.includes("--leaves") && r.top) {
        for (const l of r.top) process.stdout.write(`${"".padStart(18)}${l.msPerTurn.toFixed(3)}  ${l.key}\n`);
      }
    }
    return total;
  };
  const m = turnPhases(load(file), Number(turns));
  const total = show("measured", m.phases);
  if (floorFile) {
    const f = turnPhases(load(floorFile), Number(floorTurns));
    const ft = show("\nfloor", f.phases);
    process.stdout.write(`measured / floor: ${(total / ft).toFixed(2)} ×\n`);
  }
  if (process.argv.includes("--files")) {
    process.stdout.write("\nby Loopgate file:\n");
    for (const r of m.files.slice(0, 30)) process.stdout.write(`${r.msPerTurn.toFixed(3).padStart(8)}  ${r.key}\n`);
  }
}
