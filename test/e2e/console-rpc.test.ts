/*
 * What the web console reads that no other client did: `runs.list` (the Runs page) and the live `activity` of each
 * session in `sessions.list` / `sessions.get` (the Sessions page's idle / running / queued N).
 */
import { describe, expect, it } from "vitest";
import { connectedPeer, deferred, isLifecycleEnd, TestProvider, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

describe("runs.list and session activity for the console", () => {
  it("reads an earlier transcript generation with chat.history's generation", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    await peer.response(peer.send("agent", { message: "first life", idempotencyKey: "g-1", sessionKey: "gen" }), 2);
    await peer.call("sessions.reset", { sessionKey: "gen" });
    await peer.response(peer.send("agent", { message: "second life", idempotencyKey: "g-2", sessionKey: "gen" }), 2);
    const texts = (res: { payload?: Record<string, unknown> }) =>
      JSON.stringify((res.payload!.messages as unknown[]) ?? []);
    const current = await peer.call("chat.history", { sessionKey: "gen" });
    expect(current.payload?.generation).toBe(2);
    expect(texts(current)).toContain("second life");
    expect(texts(current)).not.toContain("first life");
    const earlier = await peer.call("chat.history", { sessionKey: "gen", generation: 1 });
    expect(earlier.payload?.generation).toBe(1);
    expect(texts(earlier)).toContain("first life");
    expect(texts(earlier)).not.toContain("second life");
    const beyond = await peer.call("chat.history", { sessionKey: "gen", generation: 3 });
    expect(beyond.error?.code).toBe("invalid_params");
    expect(beyond.error?.message).toContain("params.generation");
  });

  it("lists the newest runs first with status, model and tokens, and never the message", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    for (const id of ["r-1", "r-2", "r-3"]) {
      await peer.response(peer.send("agent", { message: `secret ${id}`, idempotencyKey: id, sessionKey: "rl" }), 2);
    }
    await peer.response(peer.send("agent", { message: "x", idempotencyKey: "other-1", sessionKey: "elsewhere" }), 2);
    const all = await peer.call("runs.list", { limit: 3 });
    const runs = all.payload!.runs as Array<Record<string, unknown>>;
    expect(runs.map((r) => r.runId)).toEqual(["other-1", "r-3", "r-2"]);
    expect(runs[1]).toMatchObject({
      sessionKey: "agent:main:rl",
      status: "ok",
      model: "t/m",
      actor: expect.any(String),
    });
    expect(typeof runs[1].durationMs).toBe("number");
    expect(JSON.stringify(runs)).not.toContain("secret");
    const one = await peer.call("runs.list", { sessionKey: "rl" });
    expect((one.payload!.runs as Array<{ runId: string }>).map((r) => r.runId)).toEqual(["r-3", "r-2", "r-1"]);
    const bad = await peer.call("runs.list", { limit: 1000 });
    expect(bad.error?.code).toBe("invalid_params");
    expect(bad.error?.message).toContain("params.limit");
  });

  it("shows a busy session as running with the number queued behind it, and idle once it is done", async () => {
    const gate = deferred();
    const provider = new TestProvider((_req, i) => (i === 0 ? { before: ["busy "], gate: gate.promise } : {}));
    const { url } = await gateway({ provider });
    const peer = await connectedPeer(url);
    const first = peer.send("agent", { message: "one", idempotencyKey: "busy-1", sessionKey: "act" });
    await peer.seen((f) => f.event === "agent" && f.payload?.runId === "busy-1" && f.payload?.stream === "assistant");
    await peer.call("chat.send", {
      sessionKey: "act",
      message: "two",
      idempotencyKey: "busy-2",
      queueMode: "followup",
    });
    const busy = await peer.call("sessions.get", { sessionKey: "act" });
    expect((busy.payload!.session as { activity?: unknown }).activity).toEqual({
      state: "running",
      activeRunId: "busy-1",
      queued: 1,
    });
    const listed = await peer.call("sessions.list");
    const row = (listed.payload!.sessions as Array<{ key: string; activity?: unknown }>).find(
      (s) => s.key === "agent:main:act",
    );
    expect(row?.activity).toEqual({ state: "running", activeRunId: "busy-1", queued: 1 });
    gate.resolve();
    await peer.response(first, 2);
    await peer.seen(isLifecycleEnd("busy-2"));
    await peer.call("agent.wait", { runId: "busy-2" });
    const idle = await peer.call("sessions.get", { sessionKey: "act" });
    expect((idle.payload!.session as { activity?: unknown }).activity).toEqual({ state: "idle", queued: 0 });
  });
});
