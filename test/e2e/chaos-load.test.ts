/*
 * Load, short: a few dozen sessions × a few turns at once, with event-integrity checks (the long run is
 * `npm run test:soak`, see test/e2e/soak.test.ts; LOOPGATE_SOAK_SESSIONS and LOOPGATE_SOAK_TURNS set the size).
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { removeTempDirs, startTestGateway, type TestGateway } from "../fixtures/gateway/harness.js";
import { intKnob, report } from "../fixtures/soak/knobs.js";
import { runLoad } from "../fixtures/soak/load.js";

const running: TestGateway[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.gw.close()));
});
afterAll(() => removeTempDirs());

describe("a gateway under load", () => {
  it("delivers every event of every run: seq 1..n and exactly one end per run", async () => {
    const g = await startTestGateway();
    running.push(g);
    const figures = await runLoad(g.url, {
      sessions: intKnob("LOOPGATE_SOAK_SESSIONS", 40),
      turns: intKnob("LOOPGATE_SOAK_TURNS", 3),
      clients: 4,
    });
    report("load", { ...figures, problems: figures.problems.length });
    expect(figures.problems).toEqual([]);
    expect(figures).toMatchObject({ brokenRuns: 0, frameSeqGaps: 0, failedRuns: 0 });
    expect(figures.runs).toBe(figures.sessions * intKnob("LOOPGATE_SOAK_TURNS", 3));
  }, 60000);
});
