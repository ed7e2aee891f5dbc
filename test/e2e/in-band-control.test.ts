/*
 * In-band control in a shared session (SPEC 21, issue 25 item 7), over a real gateway, a real SQLite store and two
 * real WebSocket clients writing into one session. Client A's run holds the session (its model waits on a gate that
 * only an abort opens) with two more of A's messages queued behind it; client B then sends `/stop`, or a message
 * with queueMode "interrupt". In-band commands act on the session for any writer, but never silently: A sees each
 * of its runs end `aborted` / `dropped` with who did it and with what, and B's receipt says what its command did.
 * A token with `commands: false` may not use in-band control at all.
 */
import { describe, expect, it } from "vitest";
import {
  connectedPeer,
  deferred,
  type Frame,
  isLifecycleEnd,
  type RawPeer,
  TestProvider,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

const SESSION = "agent:main:shared";

/** A long run for "long task" (its model call waits until the run is aborted); an echo for anything else. */
function provider(): TestProvider {
  const never = deferred<void>().promise;
  return new TestProvider((req) => {
    const last = [...req.messages].reverse().find((m) => m.role === "user");
    const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
    return text.includes("long task") ? { before: ["working"], gate: never } : { before: ["reply to ", text] };
  });
}

const tokens = [
  { token: "bridge-a", scopes: ["operator.write"], sessions: ["agent:main:*"] },
  { token: "bridge-b", scopes: ["operator.write"], sessions: ["agent:main:*"] },
  { token: "bridge-quiet", scopes: ["operator.write"], sessions: ["agent:main:*"], commands: false },
];

async function sharedSession() {
  const g = await gateway({ provider: provider(), config: { gateway: { auth: { token: "root", tokens } } } });
  const a = await connectedPeer(g.url, { token: "bridge-a", client: { id: "bridge-a" } });
  const b = await connectedPeer(g.url, { token: "bridge-b", client: { id: "bridge-b" } });
  // A's run is running (its first chunk streamed), and two more of A's messages wait behind it
  const running = a.send("agent", { message: "long task", sessionKey: SESSION, idempotencyKey: "a-run" });
  expect((await a.response(running)).payload).toMatchObject({ receipt: { kind: "started" } });
  await a.seen((f) => f.event === "agent" && f.payload?.runId === "a-run" && f.payload?.stream === "assistant");
  for (const id of ["a-queued-1", "a-queued-2"]) {
    const res = await a.call("agent", { message: id, sessionKey: SESSION, idempotencyKey: id, queueMode: "followup" });
    expect(res.payload).toMatchObject({ receipt: { kind: "queued" } });
  }
  return { ...g, a, b };
}

/** A's view of how one of its runs ended: its terminal lifecycle event and its agent.wait answer. */
async function endSeenBy(peer: RawPeer, runId: string) {
  const end = (await peer.seen(isLifecycleEnd(runId), `the end of ${runId}`)).payload?.data as Record<string, unknown>;
  const wait = (await peer.call("agent.wait", { runId, timeoutMs: 5000 })).payload as Record<string, unknown>;
  console.log(`[in-band] ${runId}: event ${JSON.stringify(end)} wait ${JSON.stringify(wait)}`);
  return { end, wait };
}

const receiptOf = (f: Frame) => (f.payload as { receipt?: Record<string, unknown> }).receipt;

describe("in-band control in a shared session", () => {
  it("another-clients-stop-is-never-silent: A sees its run aborted and its queue dropped, by whom and how; B's receipt says so", async () => {
    const { a, b } = await sharedSession();
    const stop = await b.call("agent", { message: "/stop", sessionKey: SESSION, idempotencyKey: "b-stop" });
    console.log(`[in-band] B's /stop receipt: ${JSON.stringify(receiptOf(stop))}`);
    expect(receiptOf(stop)).toEqual({
      kind: "interrupted",
      command: "/stop",
      stopped: ["a-run"],
      dropped: ["a-queued-1", "a-queued-2"],
      summary: "stopped 1 run, dropped 2 queued",
    });

    const aborted = await endSeenBy(a, "a-run");
    expect(aborted.end).toMatchObject({ status: "aborted", endedBy: { actor: "bridge-b", command: "/stop" } });
    expect(aborted.end.error).toBe('stopped by "/stop" from bridge-b');
    expect(aborted.wait).toMatchObject({
      stopReason: "aborted",
      error: 'stopped by "/stop" from bridge-b',
      endedBy: { actor: "bridge-b", command: "/stop" },
    });
    for (const id of ["a-queued-1", "a-queued-2"]) {
      const dropped = await endSeenBy(a, id);
      expect(dropped.end).toMatchObject({ kind: "dropped", endedBy: { actor: "bridge-b", command: "/stop" } });
      expect(dropped.wait).toMatchObject({
        stopReason: "dropped",
        error: 'dropped by "/stop" from bridge-b',
        endedBy: { actor: "bridge-b", command: "/stop" },
      });
    }
    // B's own /stop ran as its turn
    expect((await b.call("agent.wait", { runId: "b-stop", timeoutMs: 5000 })).payload).toMatchObject({ status: "ok" });
  });

  it("another-clients-interrupt-is-never-silent: queueMode interrupt ends A's runs with the actor and the command", async () => {
    const { a, b } = await sharedSession();
    const res = await b.call("agent", {
      message: "urgent",
      sessionKey: SESSION,
      idempotencyKey: "b-urgent",
      queueMode: "interrupt",
    });
    console.log(`[in-band] B's interrupt receipt: ${JSON.stringify(receiptOf(res))}`);
    expect(receiptOf(res)).toEqual({
      kind: "interrupted",
      command: 'queueMode "interrupt"',
      stopped: ["a-run"],
      dropped: ["a-queued-1", "a-queued-2"],
      summary: "stopped 1 run, dropped 2 queued",
    });
    const by = { actor: "bridge-b", command: 'queueMode "interrupt"' };
    expect((await endSeenBy(a, "a-run")).wait).toMatchObject({ stopReason: "aborted", endedBy: by });
    const dropped = await endSeenBy(a, "a-queued-1");
    expect(dropped.end).toMatchObject({ kind: "dropped", endedBy: by });
    expect(dropped.wait).toMatchObject({ error: 'dropped by queueMode "interrupt" from bridge-b', endedBy: by });
    expect((await b.call("agent.wait", { runId: "b-urgent", timeoutMs: 5000 })).payload).toMatchObject({
      status: "ok",
    });
  });

  it("a-token-with-commands-false-cannot-stop-others: /stop and interrupt are refused, naming the key; A's run goes on", async () => {
    const { a, url } = await sharedSession();
    const quiet = await connectedPeer(url, { token: "bridge-quiet", client: { id: "bridge-quiet" } });
    const stop = await quiet.call("agent", { message: "/stop", sessionKey: SESSION, idempotencyKey: "q-stop" });
    console.log(`[in-band] commands:false /stop: ${JSON.stringify(stop.error)}`);
    expect(stop.error).toMatchObject({
      code: "forbidden",
      message:
        'params.message: "/stop" is in-band control, which this token may not use (gateway.auth.tokens[2].commands is false); chat.abort stops the runs this client started',
    });
    const reset = await quiet.call("chat.send", { message: "/reset", sessionKey: SESSION, idempotencyKey: "q-reset" });
    expect(reset.error?.message).toMatch(/^params\.message: "\/reset" is in-band control/);
    const interrupt = await quiet.call("agent", {
      message: "hello",
      sessionKey: SESSION,
      idempotencyKey: "q-int",
      queueMode: "interrupt",
    });
    expect(interrupt.error).toMatchObject({
      code: "forbidden",
      message:
        'params.queueMode: "interrupt" is in-band control, which this token may not use (gateway.auth.tokens[2].commands is false)',
    });
    // plain text is fine, and A's run and queue are untouched
    const plain = await quiet.call("agent", {
      message: "just text",
      sessionKey: SESSION,
      idempotencyKey: "q-text",
      queueMode: "followup",
    });
    expect(plain.payload).toMatchObject({ receipt: { kind: "queued", position: 3 } });
    // the session's own queue mode "interrupt" does not hand the token the control it was denied: it waits its turn
    const admin = await connectedPeer(url, { token: "root", scopes: ["operator.admin"] });
    expect((await admin.call("sessions.patch", { key: SESSION, queueMode: "interrupt" })).ok).toBe(true);
    const viaSession = await quiet.call("agent", {
      message: "more text",
      sessionKey: SESSION,
      idempotencyKey: "q-more",
    });
    expect(viaSession.payload).toMatchObject({ receipt: { kind: "queued", mode: "followup", position: 4 } });
    expect(a.all(isLifecycleEnd("a-run"))).toEqual([]);
    expect(a.all(isLifecycleEnd("a-queued-1"))).toEqual([]);
    // chat.abort keeps its RPC rule: A stops its own run
    expect((await a.call("chat.abort", { sessionKey: SESSION, runId: "a-run" })).ok).toBe(true);
    expect((await endSeenBy(a, "a-run")).wait).toMatchObject({ stopReason: "aborted" });
    for (const id of ["q-text", "q-more"]) {
      const w = await quiet.call("agent.wait", { runId: id, timeoutMs: 5000 });
      console.log(`[in-band] ${id}: ${JSON.stringify(w.payload)}`);
    }
  });

  it("another-clients-stop-of-a-run-waiting-for-its-lane-says-who: a run not yet started ends aborted with endedBy too", async () => {
    // one run at a time in the global lane: A's run in a second session waits there, not yet started
    const g = await gateway({
      provider: provider(),
      config: {
        agents: { defaults: { model: { primary: "t/m" }, maxConcurrent: 1 } },
        gateway: { auth: { token: "root", tokens } },
      },
    });
    const a = await connectedPeer(g.url, { token: "bridge-a", client: { id: "bridge-a" } });
    const b = await connectedPeer(g.url, { token: "bridge-b", client: { id: "bridge-b" } });
    const holder = a.send("agent", { message: "long task", sessionKey: "agent:main:other", idempotencyKey: "holder" });
    await a.seen((f) => f.event === "agent" && f.payload?.runId === "holder" && f.payload?.stream === "assistant");
    await a.call("agent", { message: "long task", sessionKey: SESSION, idempotencyKey: "a-waiting" });
    const stop = await b.call("agent", { message: "/stop", sessionKey: SESSION, idempotencyKey: "b-stop-2" });
    expect(receiptOf(stop)).toMatchObject({ kind: "interrupted", stopped: ["a-waiting"], dropped: [] });
    const { end, wait } = await endSeenBy(a, "a-waiting");
    expect(end).toMatchObject({ status: "aborted", endedBy: { actor: "bridge-b", command: "/stop" } });
    expect(wait).toMatchObject({
      error: expect.stringContaining('stopped by "/stop" from bridge-b'),
      endedBy: { actor: "bridge-b", command: "/stop" },
    });
    expect((await a.call("chat.abort", { sessionKey: "agent:main:other", runId: "holder" })).ok).toBe(true);
    await a.response(holder, 2);
  });
});
