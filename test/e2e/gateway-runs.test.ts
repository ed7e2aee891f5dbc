/*
 * Runs through the gateway: the two-frame `agent` reply, idempotency, agent.wait, chat.*, sessions.*, event
 * streams (order, seq, visibility, chat projection), slow consumers and the drain on shutdown. The model is the
 * TestProvider: its turns wait on gates the test opens, so nothing here depends on timing.
 */

import { describe, expect, it } from "vitest";
import { GatewayClient } from "../../src/client/gateway-client.js";
import type { AgentEventPayload, ChatEventPayload } from "../../src/protocol/payloads.js";
import {
  connectedPeer,
  deferred,
  type Frame,
  isLifecycleEnd,
  pausablePeer,
  runEvents,
  TestProvider,
  type TestTurn,
  useTestGateways,
  WAIT_MS,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

/** A provider whose turns are handed out by the test, one per model call. */
function scripted(turns: TestTurn[]): TestProvider {
  return new TestProvider((_req, i) => turns[i] ?? { before: ["(extra turn)"] });
}

async function waitUntil(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const isAssistant = (runId: string) => (f: Frame) =>
  f.event === "agent" && f.payload?.runId === runId && f.payload?.stream === "assistant";

describe("agent over the gateway", () => {
  it("answers accepted first (before the run's events), then the final with payloads and usage", async () => {
    const gate = deferred();
    const { url } = await gateway({ provider: scripted([{ before: ["Hel"], gate: gate.promise, after: ["lo!"] }]) });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "hi", idempotencyKey: "run-1" });
    const accepted = await peer.response(id, 1);
    expect(accepted.payload).toEqual({
      runId: "run-1",
      sessionKey: "agent:main:main",
      status: "accepted",
      acceptedAt: expect.any(Number),
      receipt: { kind: "started" },
    });
    await peer.seen(isAssistant("run-1"), "the first delta");
    // the run is mid-stream (gated): no final yet, and the ack came before any of its events
    expect(peer.all((f) => f.type === "res" && f.id === id)).toHaveLength(1);
    const firstEvent = peer.frames.findIndex((f) => f.event === "agent" && f.payload?.runId === "run-1");
    expect(peer.frames.indexOf(accepted)).toBeLessThan(firstEvent);

    gate.resolve();
    const final = await peer.response(id, 2);
    expect(final.ok).toBe(true);
    expect(final.payload).toMatchObject({
      runId: "run-1",
      status: "ok",
      summary: "completed",
      result: {
        payloads: [{ text: "Hello!" }],
        meta: { durationMs: expect.any(Number), usage: { input: 10, output: 5, total: 15 } },
      },
    });
    peer.close();
  });

  it("returns the existing run for a repeated idempotencyKey and never starts a second one", async () => {
    const gate = deferred();
    const provider = scripted([{ before: ["once"], gate: gate.promise }]);
    const { url } = await gateway({ provider });
    const peer = await connectedPeer(url);
    const first = peer.send("agent", { message: "do it", idempotencyKey: "same-key" });
    const acc1 = await peer.response(first, 1);
    // repeated while the run is still going
    const second = peer.send("agent", { message: "do it", idempotencyKey: "same-key" });
    const acc2 = await peer.response(second, 1);
    expect(acc2.payload).toMatchObject({ runId: "same-key", acceptedAt: acc1.payload?.acceptedAt });
    gate.resolve();
    const [f1, f2] = await Promise.all([peer.response(first, 2), peer.response(second, 2)]);
    expect(f2.payload).toEqual(f1.payload);
    // and repeated after it finished: accepted + the stored final, still no model call
    const third = peer.send("agent", { message: "do it", idempotencyKey: "same-key" });
    expect((await peer.response(third, 1)).payload).toMatchObject({ runId: "same-key", status: "accepted" });
    expect((await peer.response(third, 2)).payload).toMatchObject({ runId: "same-key", status: "ok" });
    expect(provider.calls).toBe(1);
    const history = await peer.call("chat.history", { sessionKey: "main" });
    const users = (history.payload!.messages as Array<{ role?: string }>).filter((m) => m.role === "user");
    expect(users).toHaveLength(1);
    peer.close();
  });

  it("agent.wait: times out without stopping the run, is pending while queued, ok after completion", async () => {
    const gateA = deferred();
    const { url } = await gateway({ provider: scripted([{ before: ["a"], gate: gateA.promise }, { before: ["b"] }]) });
    const peer = await connectedPeer(url);
    const a = peer.send("agent", { message: "first", idempotencyKey: "wait-a" });
    await peer.seen(isAssistant("wait-a"), "run A streaming");
    const b = peer.send("agent", { message: "second", idempotencyKey: "wait-b" });
    expect((await peer.response(b, 1)).payload).toMatchObject({ receipt: { kind: "queued" } });

    const waitA = await peer.call("agent.wait", { runId: "wait-a", timeoutMs: 20 });
    expect(waitA.payload).toEqual({ runId: "wait-a", status: "timeout", startedAt: expect.any(Number) });
    const waitB = await peer.call("agent.wait", { runId: "wait-b", timeoutMs: 20 });
    expect(waitB.payload).toEqual({ runId: "wait-b", status: "pending" });

    // the timed-out wait did not stop A: it finishes once its model answers, and B runs after it
    gateA.resolve();
    expect((await peer.response(a, 2)).payload).toMatchObject({ status: "ok" });
    expect((await peer.response(b, 2)).payload).toMatchObject({ status: "ok" });
    const done = await peer.call("agent.wait", { runId: "wait-a" });
    expect(done.payload).toMatchObject({
      runId: "wait-a",
      status: "ok",
      startedAt: expect.any(Number),
      endedAt: expect.any(Number),
    });

    const unknown = await peer.call("agent.wait", { runId: "no-such-run" });
    expect(unknown.error).toMatchObject({ code: "not_found", message: expect.stringContaining("no-such-run") });
    peer.close();
  });

  it("keeps finished runs' results across a gateway restart on the same state dir", async () => {
    const first = await gateway();
    const peer = await connectedPeer(first.url);
    const id = peer.send("agent", { message: "remember me", idempotencyKey: "durable-1" });
    const final = await peer.response(id, 2);
    const before = await peer.call("agent.wait", { runId: "durable-1" });
    peer.close();
    await first.gw.close();

    const provider = new TestProvider();
    const second = await gateway({ stateDir: first.stateDir, provider });
    const client = await GatewayClient.connect({ url: second.url, client: { id: "test", mode: "test" } });
    expect(await client.agentWait("durable-1")).toEqual(before.payload);
    expect(before.payload).toMatchObject({ status: "ok" });
    // the same key after the restart: the stored final, no new model call
    expect(await client.agent({ message: "remember me", idempotencyKey: "durable-1" })).toEqual(final.payload);
    expect(provider.calls).toBe(0);
    await client.close();
  });

  it("chat.abort aborts queued turns first, then the active run; both end aborted", async () => {
    const gate = deferred();
    const { url } = await gateway({ provider: scripted([{ before: ["working"], gate: gate.promise }]) });
    const peer = await connectedPeer(url);
    const a = peer.send("agent", { message: "long task", idempotencyKey: "abort-a", sessionKey: "job" });
    await peer.seen(isAssistant("abort-a"), "run A streaming");
    const b = peer.send("chat.send", { sessionKey: "job", message: "and then", idempotencyKey: "abort-b" });
    await peer.response(b);

    const res = await peer.call("chat.abort", { sessionKey: "job" });
    expect(res.payload).toEqual({ ok: true, aborted: true, runIds: ["abort-b", "abort-a"] });
    expect((await peer.response(a, 2)).payload).toMatchObject({ runId: "abort-a", summary: "aborted" });
    const chatAborted = await peer.seen(
      (f) => f.event === "chat" && f.payload?.runId === "abort-a" && f.payload?.state === "aborted",
    );
    expect(chatAborted.payload).toMatchObject({ sessionKey: "agent:main:job", stopReason: "aborted" });
    const waited = await peer.call("agent.wait", { runId: "abort-a" });
    expect(waited.payload).toMatchObject({ status: "error", stopReason: "aborted" });
    expect((await peer.call("agent.wait", { runId: "abort-b", timeoutMs: 1000 })).payload).toMatchObject({
      status: "error",
    });
    gate.resolve();
    peer.close();
  });

  it("delivers a run's events in order with no gaps, identically to two subscribers", async () => {
    const { url } = await gateway({
      provider: scripted([{ before: ["one ", "two ", "three ", "four ", "five"] }]),
      gateway: { chatDeltaIntervalMs: 1 },
    });
    const watcher = await connectedPeer(url);
    const sender = await connectedPeer(url);
    const id = sender.send("agent", { message: "count", idempotencyKey: "seq-run" });
    await sender.response(id, 2);
    await watcher.seen(isLifecycleEnd("seq-run"), "the end on the watcher");
    const a = runEvents(sender, "seq-run");
    const b = runEvents(watcher, "seq-run");
    expect(a.map((e) => e.seq)).toEqual(a.map((_, i) => i + 1));
    expect(b).toEqual(a);
    expect(a.find((e) => e.stream === "lifecycle")).toMatchObject({
      sessionKey: "agent:main:main",
      data: { phase: "start" },
    });
    expect(
      a
        .filter((e) => e.stream === "assistant")
        .map((e) => (e.data as { delta: string }).delta)
        .join(""),
    ).toBe("one two three four five");
    // each connection's own frame seq stays contiguous too
    for (const p of [watcher, sender]) {
      const seqs = p.all((f) => f.type === "event").map((f) => f.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }
    watcher.close();
    sender.close();
  });

  it("projects the stream into chat deltas and a final carrying the whole reply", async () => {
    const gate = deferred();
    const { url } = await gateway({
      provider: scripted([{ before: ["Hello, "], gate: gate.promise, after: ["wor", "ld"] }]),
      gateway: { chatDeltaIntervalMs: 60_000 },
    });
    const peer = await connectedPeer(url);
    const id = peer.send("chat.send", { sessionKey: "chatty", message: "greet me", idempotencyKey: "chat-1" });
    const ack = await peer.response(id);
    expect(ack.payload).toMatchObject({ runId: "chat-1", sessionKey: "agent:main:chatty", status: "accepted" });
    // the first delta goes out at once even with a long interval...
    const first = await peer.seen((f) => f.event === "chat" && f.payload?.state === "delta");
    expect(first.payload).toMatchObject({ runId: "chat-1", deltaText: "Hello, " });
    gate.resolve();
    // ...the rest is buffered and flushed before the final
    const final = await peer.seen((f) => f.event === "chat" && f.payload?.state === "final");
    const chats = peer.all((f) => f.event === "chat").map((f) => f.payload as unknown as ChatEventPayload);
    expect(chats.map((c) => c.state)).toEqual(["delta", "delta", "final"]);
    // the whole message rides on the first delta (a checkpoint); "world" grows it by less than 512 characters
    expect(chats[0]).toMatchObject({ message: { content: [{ type: "text", text: "Hello, " }] } });
    expect(chats[1]).toMatchObject({ deltaText: "world" });
    expect(chats[1]).not.toHaveProperty("message");
    expect(final.payload).toMatchObject({
      sessionKey: "agent:main:chatty",
      message: { role: "assistant", content: [{ type: "text", text: "Hello, world" }] },
      stopReason: "stop",
    });
    expect(chats.map((c) => c.seq)).toEqual([...chats.map((c) => c.seq)].sort((x, y) => x - y));
    // chat.send answers once: no second response frame
    expect(peer.all((f) => f.type === "res" && f.id === id)).toHaveLength(1);
    peer.close();
  });

  it("sends a chat error with the provider's error kind once the retries are used up", async () => {
    // 1 try + 3 retries (the default policy), each asking for a 1 ms wait
    const limited = {
      before: ["partial"],
      error: { kind: "rate_limit" as const, message: "slow down", retryAfterMs: 1 },
    };
    const { url } = await gateway({ provider: scripted([limited, limited, limited, limited]) });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "x", idempotencyKey: "err-1" });
    expect((await peer.response(id, 2)).payload).toMatchObject({ status: "error", summary: "failed" });
    const err = await peer.seen((f) => f.event === "chat" && f.payload?.state === "error");
    expect(err.payload).toMatchObject({
      runId: "err-1",
      errorKind: "rate_limit",
      errorMessage: expect.stringContaining("slow down"),
    });
    peer.close();
  });

  it("shows a client without read scope only the runs it started; operators see all", async () => {
    const { url } = await gateway();
    const operator = await connectedPeer(url);
    const alice = await connectedPeer(url, { scopes: ["operator.write"] });
    const bob = await connectedPeer(url, { scopes: ["operator.write"] });
    const a = alice.send("agent", { message: "mine", idempotencyKey: "vis-a", sessionKey: "alice" });
    await alice.response(a, 2);
    const b = bob.send("agent", { message: "mine too", idempotencyKey: "vis-b", sessionKey: "bob" });
    await bob.response(b, 2);
    await operator.seen(isLifecycleEnd("vis-b"), "bob's run on the operator");
    expect(runEvents(alice, "vis-a").length).toBeGreaterThan(0);
    expect(runEvents(alice, "vis-b")).toEqual([]);
    expect(runEvents(bob, "vis-a")).toEqual([]);
    expect(runEvents(operator, "vis-a").length).toBe(runEvents(alice, "vis-a").length);
    expect(alice.all((f) => f.event === "chat" && f.payload?.runId === "vis-b")).toEqual([]);
    // and a write-only client reads no history, not even of the session it sent to (SPEC 21)
    for (const sessionKey of ["alice", "bob"]) {
      expect((await bob.call("chat.history", { sessionKey })).error).toMatchObject({
        code: "unauthorized",
        details: { code: "MISSING_SCOPE", missingScope: "operator.read" },
      });
    }
    expect((await bob.call("sessions.list")).error).toMatchObject({ code: "unauthorized" });
    for (const p of [operator, alice, bob]) p.close();
  });

  it("client.agent follows both frames and streams the run's events to onEvent", async () => {
    const { url } = await gateway({ provider: scripted([{ before: ["streamed ", "reply"] }]) });
    const client = await GatewayClient.connect({ url, client: { id: "test", mode: "test" } });
    const events: AgentEventPayload[] = [];
    let acceptedAt = 0;
    const final = await client.agent(
      { message: "go", idempotencyKey: "client-1", sessionKey: "c" },
      { onAccepted: (a) => (acceptedAt = a.acceptedAt), onEvent: (e) => events.push(e) },
    );
    expect(acceptedAt).toBeGreaterThan(0);
    expect(final).toMatchObject({
      runId: "client-1",
      status: "ok",
      result: { payloads: [{ text: "streamed reply" }] },
    });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.stream !== "queue").map((e) => e.stream)).toEqual([
      "lifecycle",
      "assistant",
      "assistant",
      "lifecycle",
    ]);
    await expect(client.agent({ message: "", idempotencyKey: "bad" })).rejects.toMatchObject({
      code: "invalid_params",
      message: "params.message: must not be empty",
    });
    await client.close();
  });
});

describe("sessions over the gateway", () => {
  it("lists, reads, pages history, resets to a new generation and deletes", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    for (const [i, text] of ["one", "two", "three"].entries()) {
      const id = peer.send("agent", { message: text, idempotencyKey: `s-${i}`, sessionKey: "notes" });
      await peer.response(id, 2);
    }
    const list = await peer.call("sessions.list");
    expect((list.payload!.sessions as Array<{ key: string }>).map((s) => s.key)).toContain("agent:main:notes");
    const got = await peer.call("sessions.get", { sessionKey: "notes" });
    const generation = (got.payload!.session as { generation: number }).generation;
    expect(got.payload?.session).toMatchObject({ key: "agent:main:notes", totalTokens: 45 });
    expect(got.payload?.session).not.toHaveProperty("skillsSnapshot");

    const page1 = await peer.call("chat.history", { sessionKey: "notes", limit: 2 });
    // OpenClaw's message shape: role and content on the entry itself
    const rows1 = page1.payload?.messages as Array<{ seq: number; role: string; content: unknown }>;
    expect(rows1.map((r) => r.role)).toEqual(["user", "assistant"]);
    expect(rows1[0].content).toBe("three");
    const page2 = await peer.call("chat.history", { sessionKey: "notes", limit: 2, before: page1.payload?.nextBefore });
    const rows2 = page2.payload?.messages as Array<{ seq: number; content: unknown }>;
    expect(rows2[0].content).toBe("two");
    expect(rows2.at(-1)!.seq).toBeLessThan(rows1[0].seq);

    const reset = await peer.call("sessions.reset", { key: "notes" });
    expect(reset.payload).toEqual({ ok: true, key: "agent:main:notes", generation: generation + 1 });
    expect((await peer.call("chat.history", { sessionKey: "notes" })).payload?.messages).toEqual([]);

    const del = await peer.call("sessions.delete", { sessionKey: "notes" });
    expect(del.payload).toEqual({ ok: true, key: "agent:main:notes", deleted: true, archived: [] });
    expect((await peer.call("sessions.get", { sessionKey: "notes" })).error).toMatchObject({ code: "not_found" });
    expect((await peer.call("sessions.delete", { sessionKey: "notes" })).payload).toMatchObject({ deleted: false });
    expect((await peer.call("sessions.get", {})).error?.message).toBe("params.sessionKey: required");
    peer.close();
  });

  it("refuses to reset a session while its run is in progress", async () => {
    const gate = deferred();
    const { url } = await gateway({ provider: scripted([{ before: ["busy"], gate: gate.promise }]) });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "x", idempotencyKey: "busy-1", sessionKey: "busy" });
    await peer.seen(isAssistant("busy-1"));
    const res = await peer.call("sessions.reset", { sessionKey: "busy" });
    expect(res.error).toMatchObject({ code: "conflict", retryable: true, message: expect.stringContaining("busy-1") });
    gate.resolve();
    await peer.response(id, 2);
    expect((await peer.call("sessions.reset", { sessionKey: "busy" })).ok).toBe(true);
    peer.close();
  });
});

describe("backpressure and shutdown", () => {
  it("disconnects a client that stops reading while a fast one keeps receiving", async () => {
    const big = "x".repeat(200 * 1024);
    const { url, gw } = await gateway({
      provider: scripted([{ before: [big] }, { before: ["small ", "reply"] }]),
      gateway: { maxBufferedBytes: 1024 * 1024 },
    });
    // the slow client: its own TCP socket, which the test stops reading from after the handshake
    const { peer: slow, socket } = pausablePeer(url);
    await slow.opened;
    await slow.connect();
    const fast = await connectedPeer(url);
    // a session whose history is a 200 KiB answer
    await fast.response(fast.send("agent", { message: "big", idempotencyKey: "big-1", sessionKey: "big" }), 2);
    expect(gw.connectionCount).toBe(2);

    socket().pause();
    // 60 history pages of 200 KiB each: 12 MiB nobody reads, far beyond what the kernel buffers hold
    for (let i = 0; i < 60; i++) slow.send("chat.history", { sessionKey: "big" });
    const id = fast.send("agent", { message: "still there?", idempotencyKey: "fast-1" });
    const final = await fast.response(id, 2);
    expect(final.payload).toMatchObject({ status: "ok", result: { payloads: [{ text: "small reply" }] } });
    const events = runEvents(fast, "fast-1");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    await waitUntil(() => gw.connectionCount === 1, "the slow client is dropped");
    socket().resume();
    expect((await slow.closed).code).toBe(1006);
    // the fast one is still served
    expect((await fast.call("health")).payload).toMatchObject({ ok: true });
    fast.close();
  });

  it("on close: sends shutdown, refuses new runs as retryable, lets a running run finish within the grace", async () => {
    const gate = deferred();
    const calls: string[] = [];
    const { url, gw, stateDir } = await gateway({
      provider: scripted([{ before: ["finishing"], gate: gate.promise }]),
      gateway: {
        shutdownGraceMs: WAIT_MS,
        onShutdown: () => {
          calls.push("onShutdown");
        },
      },
    });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "x", idempotencyKey: "drain-1" });
    await peer.seen(isAssistant("drain-1"));
    const closing = gw.close();
    const shutdown = await peer.seen((f) => f.event === "shutdown");
    expect(shutdown.payload).toEqual({ reason: "gateway stopping" });
    const refused = await peer.call("agent", { message: "late", idempotencyKey: "drain-2" });
    expect(refused.error).toMatchObject({ code: "unavailable", retryable: true });
    gate.resolve();
    expect((await peer.response(id, 2)).payload).toMatchObject({ status: "ok" });
    await closing;
    expect(calls).toEqual(["onShutdown"]);
    expect((await peer.closed).code).toBe(1001);

    // the run's result is in the store for the next gateway
    const next = await gateway({ stateDir });
    const client = await GatewayClient.connect({ url: next.url, client: { id: "test", mode: "test" } });
    expect(await client.agentWait("drain-1")).toMatchObject({ status: "ok" });
    await expect(client.agentWait("drain-2")).rejects.toMatchObject({ code: "not_found" });
    await client.close();
  });

  it("aborts and records runs still going when the grace ends", async () => {
    const { url, gw, stateDir } = await gateway({
      provider: scripted([{ before: ["never done"], gate: new Promise(() => {}) }]),
      gateway: { shutdownGraceMs: 0 },
    });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "x", idempotencyKey: "cut-1" });
    await peer.seen(isAssistant("cut-1"));
    await gw.close();
    expect((await peer.response(id, 2)).payload).toMatchObject({ summary: "aborted" });
    const next = await gateway({ stateDir });
    const client = await GatewayClient.connect({ url: next.url, client: { id: "test", mode: "test" } });
    expect(await client.agentWait("cut-1")).toMatchObject({ status: "error", stopReason: "aborted" });
    await client.close();
  });

  it("calls onStartup once listening", async () => {
    let seen: { url: string; port: number } | undefined;
    const { gw } = await gateway({
      gateway: {
        onStartup: (info) => {
          seen = { url: info.url, port: info.port };
        },
      },
    });
    expect(seen).toEqual({ url: gw.url, port: gw.port });
  });
});
