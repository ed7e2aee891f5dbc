// Bytes of a sampled heap profile (V8's SamplingHeapProfile: head, callFrame, selfSize, children) by allocation
// site: each sample is charged to the innermost frame of ours (a file under dist/) on its stack, else to its own
// frame, so a Loopgate call into a library counts as the Loopgate site. Used by turn-allocations.mjs and
// promoted-allocations.mjs. Returns { sites: Map<label, bytes>, total }.
export function allocationSites(profile) {
  const sites = new Map();
  let total = 0;
  const label = (f) =>
    `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(dist|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;
  (function walk(node, mine) {
    const f = node.callFrame;
    const here = f.url.includes("/dist/") ? label(f) : mine;
    if (node.selfSize > 0) {
      const site = here ?? (f.url ? label(f) : f.functionName || "(vm)");
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
      total += node.selfSize;
    }
    for (const c of node.children) walk(c, here);
  })(profile.head, undefined);
  return { sites, total };
}
