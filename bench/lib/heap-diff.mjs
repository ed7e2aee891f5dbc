// Compares two V8 heap snapshots (v8.writeHeapSnapshot) by constructor/type name: what grew, in count and bytes.
// Usage: node bench/lib/heap-diff.mjs before.heapsnapshot after.heapsnapshot [top=25]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export function heapSummary(file) {
  const snap = JSON.parse(fs.readFileSync(file, "utf8"));
  const meta = snap.snapshot.meta;
  const fields = meta.node_fields;
  const types = meta.node_types[0];
  const width = fields.length;
  const iType = fields.indexOf("type");
  const iName = fields.indexOf("name");
  const iSize = fields.indexOf("self_size");
  const byName = new Map();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]];
    const raw =
      type === "object" || type === "closure" || type === "native" ? snap.strings[snap.nodes[i + iName]] : `(${type})`;
    const name = raw.length > 60 ? `${raw.slice(0, 57)}...` : raw;
    const e = byName.get(name) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += snap.nodes[i + iSize];
    byName.set(name, e);
  }
  return byName;
}

export function heapDiff(beforeFile, afterFile) {
  const a = heapSummary(beforeFile);
  const b = heapSummary(afterFile);
  const out = [];
  for (const [name, e] of b) {
    const prev = a.get(name) ?? { count: 0, bytes: 0 };
    out.push({ name, count: e.count - prev.count, bytes: e.bytes - prev.bytes });
  }
  return out.sort((x, y) => y.bytes - x.bytes);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [before, after, top = "25"] = process.argv.slice(2);
  for (const r of heapDiff(before, after).slice(0, Number(top))) {
    process.stdout.write(`${String(r.bytes).padStart(10)} B ${String(r.count).padStart(8)}  ${r.name}\n`);
  }
}
