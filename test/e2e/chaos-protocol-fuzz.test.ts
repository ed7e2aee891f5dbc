/*
 * The protocol fuzz, short: a few hundred malformed frames from fast-check (the long run is `npm run test:soak`,
 * see test/e2e/soak.test.ts). LOOPGATE_SOAK_SEED replays a failure's seed; LOOPGATE_SOAK_FRAMES sets the count.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { connectedPeer, removeTempDirs, startTestGateway, type TestGateway } from "../fixtures/gateway/harness.js";
import { intKnob, report, seedKnob } from "../fixtures/soak/knobs.js";
import { fuzzAuthenticated, fuzzPreAuth } from "../fixtures/soak/protocol-fuzz.js";

const running: TestGateway[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.gw.close()));
});
afterAll(() => removeTempDirs());

describe("a gateway fed malformed frames", () => {
  it("answers every malformed frame with an error that says what was wrong, and keeps serving", async () => {
    const g = await startTestGateway();
    running.push(g);
    const seed = seedKnob();
    console.log(`[soak] protocol fuzz seed=${seed} (replay with LOOPGATE_SOAK_SEED=${seed})`);
    const bystander = await connectedPeer(g.url);
    const figures = await fuzzAuthenticated(g.url, intKnob("LOOPGATE_SOAK_FRAMES", 500), seed);
    const preAuth = await fuzzPreAuth(g.url, intKnob("LOOPGATE_SOAK_PREAUTH_FRAMES", 50), seed);
    report("protocol fuzz", { ...figures, preAuthFrames: preAuth, categories: JSON.stringify(figures.categories) });
    // a client that sent nothing wrong is still connected and served, and a real run still works
    expect((await bystander.call("health")).ok).toBe(true);
    const id = bystander.send("agent", { message: "after the fuzz", idempotencyKey: "after-fuzz" });
    expect((await bystander.response(id, 2)).payload).toMatchObject({ status: "ok" });
    bystander.close();
  }, 60000);
});
