// CPU profiling of just the measured part of a metric (after warm-up), through the inspector in this process:
// `node --cpu-prof` would also record module loading and warm-up, which drown a per-turn profile.
import fs from "node:fs";
import { Session } from "node:inspector/promises";

export async function startProfile(file) {
  if (!file) return async () => {};
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
  return async () => {
    const { profile } = await session.post("Profiler.stop");
    fs.writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

/**
 * Allocation sampling of the measured part: every sampled allocation is kept, also those a GC has freed since
 * (the include flags), so the profile says what a turn allocates, not only what it retains. Interval in bytes.
 */
export async function startHeapSampling(file, samplingInterval = 4096, { minorGC = true } = {}) {
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  await session.post("HeapProfiler.startSampling", {
    samplingInterval,
    includeObjectsCollectedByMajorGC: true,
    // false: what a scavenge collected is left out, so the profile is what was promoted to the old generation
    includeObjectsCollectedByMinorGC: minorGC,
  });
  return async () => {
    const { profile } = await session.post("HeapProfiler.stopSampling");
    fs.writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}
