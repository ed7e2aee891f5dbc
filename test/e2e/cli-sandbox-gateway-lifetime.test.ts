/*
 * The CLI end-to-end fixture guards one-shot commands with a 15 s kill: a hung command fails its test instead of
 * holding it. A gateway it starts used to get the same guard, so on a loaded machine a test longer than 15 s lost its
 * gateway mid-test (the two-node spend test: ECONNREFUSED, or `loopgate usage` printing nothing). This checks the
 * fixture itself, with a real `loopgate gateway` child.
 */
import { describe, expect, it } from "vitest";
import { cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";
import { connectedPeer } from "../fixtures/gateway/harness.js";

useCliSandboxes();

describe("the CLI test fixture's gateways", () => {
  it("a gateway started by a test still serves after the one-shot commands' 15 s kill guard", {
    timeout: 60_000,
  }, async () => {
    const s = cliSandbox({ prefix: "gw-lifetime" });
    const gw = await s.gateway();
    const waited = Number(process.hrtime.bigint() - gw.started) / 1e6;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 16_000 - waited)));
    expect(gw.child.exitCode).toBeNull();
    expect(gw.child.signalCode).toBeNull();
    const peer = await connectedPeer(gw.url);
    const health = await peer.response(peer.send("health", {}));
    expect(health.ok).toBe(true);
    peer.close();
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });
});
