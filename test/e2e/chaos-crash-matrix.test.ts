/*
 * The crash matrix, short: a few seeded kill -9s of a real gateway process across active, steered, collected and
 * queued input (the long run is `npm run test:soak`, see test/e2e/soak.test.ts). Replay a failure with
 * LOOPGATE_SOAK_SEED=<the printed seed>; LOOPGATE_SOAK_KILLS sets the number of kills here too.
 */
import type { ChildProcess } from "node:child_process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt } from "../fixtures/crash/gateway-process.js";
import { runCrashMatrix } from "../fixtures/soak/crash-matrix.js";
import { intKnob, report, seedKnob } from "../fixtures/soak/knobs.js";

const children: ChildProcess[] = [];
beforeAll(assertBuilt);
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

describe("a gateway killed with kill -9 at random points", () => {
  it("loses no acknowledged input, runs none twice and leaves an intact store", async () => {
    const seed = seedKnob();
    console.log(`[soak] crash matrix seed=${seed} (replay with LOOPGATE_SOAK_SEED=${seed})`);
    const figures = await runCrashMatrix({ kills: intKnob("LOOPGATE_SOAK_KILLS", 3), seed, sessions: 2 }, children);
    report("crash matrix", { ...figures, receipts: JSON.stringify(figures.receipts), problems: figures.problems.length });
    expect(figures.problems).toEqual([]);
    expect(figures).toMatchObject({ integrity: "ok", seqGaps: 0, losses: 0, doubleRuns: 0 });
    expect(figures.inputs).toBeGreaterThan(0);
  }, 60000);
});
