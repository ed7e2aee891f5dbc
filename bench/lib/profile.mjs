// Reads a V8 .cpuprofile (from `node --cpu-prof`) and aggregates self time per function and per file/package.
// Usage: node bench/lib/profile.mjs <file.cpuprofile> [top=25]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Shortens a script URL to something readable: dist/..., node_modules/<pkg>/..., node:internal/... */
export function shortUrl(url) {
  if (!url) return "(native)";
  let u = url.startsWith("file://") ? fileURLToPath(url) : url;
  if (u.startsWith(ROOT)) u = path.relative(ROOT, u);
  return u;
}

/** The package or area a file belongs to, for a coarse split of where the time goes. */
export function areaOf(url) {
  const u = shortUrl(url);
  if (u === "(native)") return "(native/VM)";
  const nm = u.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = u.slice(nm + "node_modules/".length).split("/");
    return `npm:${rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (u.startsWith("node:")) return u.split("/").slice(0, 2).join("/");
  if (u.startsWith("dist/")) return u;
  return u;
}

/**
 * The Loopgate function a sample belongs to: the nearest frame on its stack in dist/ (so time spent in node
 * internals, npm packages and native calls counts for the Loopgate code that asked for it), else the nearest npm
 * package, else the VM state ("(idle)", "(garbage collector)", ...).
 */
function ownerOf(node, byId, parent) {
  let pkg;
  for (let id = node.id; id !== undefined; id = parent.get(id)) {
    const cf = byId.get(id).callFrame;
    const u = shortUrl(cf.url);
    if (u.startsWith("dist/")) return `${cf.functionName || "(anonymous)"} ${u}`;
    if (!pkg && u.includes("node_modules/")) pkg = areaOf(cf.url);
  }
  if (pkg) return pkg;
  const name = node.callFrame.functionName;
  return name.startsWith("(") ? name : "(node internals)";
}

export function aggregateProfile(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owners = new Map();
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  let total = 0;
  const fns = new Map();
  const areas = new Map();
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (!node) continue;
    total += us;
    const cf = node.callFrame;
    const name = cf.functionName || "(anonymous)";
    const key = cf.url ? `${name} ${shortUrl(cf.url)}:${cf.lineNumber + 1}` : name;
    fns.set(key, (fns.get(key) ?? 0) + us);
    const area = cf.url ? areaOf(cf.url) : name.startsWith("(") ? name : "(native/VM)";
    areas.set(area, (areas.get(area) ?? 0) + us);
    const owner = ownerOf(node, byId, parent);
    owners.set(owner, (owners.get(owner) ?? 0) + us);
  }
  const rank = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([key, us]) => ({ key, ms: us / 1000, share: total ? us / total : 0 }));
  return { totalMs: total / 1000, functions: rank(fns), areas: rank(areas), owners: rank(owners) };
}

export function formatProfile(agg, top = 25) {
  const line = (r) => `${(r.share * 100).toFixed(1).padStart(5)}%  ${r.ms.toFixed(1).padStart(8)} ms  ${r.key}`;
  return [
    `total sampled: ${agg.totalMs.toFixed(0)} ms`,
    "-- self time by area --",
    ...agg.areas.slice(0, top).map(line),
    "-- time by the nearest Loopgate function on the stack (node internals and packages count for their caller) --",
    ...agg.owners.slice(0, top).map(line),
    "-- self time by function --",
    ...agg.functions.slice(0, top).map(line),
  ].join("\n");
}

/**
 * Per-unit (e.g. per-turn) difference of two aggregated profiles, by `kind` (areas, owners, functions): what the
 * measured code spends that the floor does not. Rows sorted by the difference.
 */
export function diffProfiles(measured, measuredUnits, floor, floorUnits, kind = "owners") {
  const f = new Map(floor[kind].map((r) => [r.key, r.ms / floorUnits]));
  const seen = new Set();
  const rows = measured[kind].map((r) => {
    seen.add(r.key);
    const m = r.ms / measuredUnits;
    const fl = f.get(r.key) ?? 0;
    return { key: r.key, measured: m, floor: fl, diff: m - fl };
  });
  for (const [key, fl] of f) if (!seen.has(key)) rows.push({ key, measured: 0, floor: fl, diff: -fl });
  return rows.sort((a, b) => b.diff - a.diff);
}

export function formatDiff(rows, top = 25, unit = "ms/turn") {
  const head = `${"measured".padStart(9)} ${"floor".padStart(9)} ${"extra".padStart(9)}  (${unit})`;
  return [
    head,
    ...rows
      .slice(0, top)
      .map(
        (r) =>
          `${r.measured.toFixed(3).padStart(9)} ${r.floor.toFixed(3).padStart(9)} ${r.diff.toFixed(3).padStart(9)}  ${r.key}`,
      ),
  ].join("\n");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write("usage: node bench/lib/profile.mjs <file.cpuprofile> [top]\n");
    process.exit(2);
  }
  const agg = aggregateProfile(JSON.parse(fs.readFileSync(file, "utf8")));
  process.stdout.write(`${formatProfile(agg, Number(process.argv[3] ?? 25))}\n`);
}

/** A CPU profile's nodes by id, each node's parent, and each node's self time in µs (its samples' deltas). */
export function profileIndex(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  return { byId, parent, self };
}

/** The first phase of `phases` ([name, regex] over "file function") that a frame falls in, or undefined. */
export function phaseOf(phases, file, fn) {
  for (const [name, re] of phases) if (re.test(`${file} ${fn || "(anonymous)"}`)) return name;
  return undefined;
}

/** Self time of functions whose name matches `pattern`, split by the chain of their callers (depth levels up). */
export function callersOf(profile, pattern, depth = 4) {
  const { byId, parent, self } = profileIndex(profile);
  const out = new Map();
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (!node || !pattern.test(node.callFrame.functionName)) continue;
    const chain = [];
    let p = parent.get(id);
    while (p !== undefined && chain.length < depth) {
      const cf = byId.get(p).callFrame;
      chain.push(`${cf.functionName || "(anon)"}@${shortUrl(cf.url)}:${cf.lineNumber + 1}`);
      p = parent.get(p);
    }
    const key = chain.join(" < ");
    out.set(key, (out.get(key) ?? 0) + us);
  }
  return [...out.entries()].sort((a, b) => b[1] - a[1]).map(([key, us]) => ({ key, ms: us / 1000 }));
}
