/*
 * Small wire bugs of issue 27 (item 7), each pinned through a real gateway on a real WebSocket and a real SQLite
 * store; the model is the TestProvider (harness.ts), whose turns wait on gates the test opens.
 */
import { describe, expect, it } from "vitest";
import { connectedPeer, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

describe("wire errors", () => {
  it("param-error-prefixed-once", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "hi", sessionId: "no-such-session", idempotencyKey: "p-1" });
    const res = await peer.response(id);
    console.log(`unknown sessionId: ${JSON.stringify(res.error)}`);
    expect(res.error).toMatchObject({ code: "invalid_params" });
    expect(res.error?.message).toBe('params.sessionId: unknown session id "no-such-session"');
    const mode = await peer.response(peer.send("agent", { message: "hi", queueMode: "later", idempotencyKey: "p-2" }));
    console.log(`bad queueMode: ${JSON.stringify(mode.error)}`);
    expect(mode.error?.message).toMatch(/^params\.queueMode: (?!queueMode)/);
    peer.close();
  });
});
