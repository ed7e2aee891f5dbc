/*
 * Two gateway nodes on one Postgres schema, in this process: real gateways, real WebSockets, real Postgres. A run
 * accepted and executed on node A is followed by a client of node B (SPEC 18, issue 14 "events across nodes").
 * Until session ownership across nodes lands (pg-cluster), the session's messages go to node A only. Waits are
 * bounded (the harness's WAIT_MS); nothing here asserts how long anything took.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PgEventBus } from "../../src/events/pg-bus.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import {
  carriesChunk,
  connectedPeer,
  deferred,
  type Frame,
  isLifecycleEnd,
  type RawPeer,
  removeTempDirs,
  runEvents,
  startTestGateway,
  type TestGateway,
} from "../fixtures/gateway/harness.js";

type Ev = { runId: string; seq: number; stream: string; data: Record<string, unknown> };

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("two gateway nodes on one Postgres", () => {
  let ts: TestSchema;
  let nodeA: TestGateway;
  let nodeB: TestGateway;
  /** a third node whose only client follows nothing: it must read none of node A's run events */
  let nodeC: TestGateway;
  const peers: RawPeer[] = [];

  const onNode = async (node: TestGateway, scopes?: string[]) => {
    const peer = await connectedPeer(node.url, scopes ? { scopes } : {});
    peers.push(peer);
    return peer;
  };

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    const storage = { backend: "postgres", postgres: { url: ts.options.url, schema: ts.schema } };
    // both nodes up before any run: a node's start-up recovery must not meet the other's runs (one pid here)
    nodeA = await startTestGateway({ config: { storage } });
    nodeB = await startTestGateway({ config: { storage } });
    nodeC = await startTestGateway({ config: { storage } });
  });
  afterAll(async () => {
    for (const p of peers) p.close();
    await nodeA?.gw.close();
    await nodeB?.gw.close();
    await nodeC?.gw.close();
    await ts?.drop();
    removeTempDirs();
  });

  it("a client on node B that follows the session sees a run executing on node A live (every agent event in seq order, the chat final), waits for it, replays it, and hears the session change and its messages; node C, whose client follows nothing, reads none of it", async () => {
    const gate = deferred();
    nodeA.provider.script = () => ({ before: ["one ", "two "], gate: gate.promise, after: ["three ", "four"] });
    const watcher = await onNode(nodeB, ["operator.read"]);
    // an operator on node C that sees every run but follows none of them
    const idle = await onNode(nodeC, ["operator.read"]);
    // it hears that sessions change (a run's status among them) without following any run
    expect((await idle.call("sessions.subscribe", {})).ok).toBe(true);
    expect((await watcher.call("sessions.subscribe", {})).ok).toBe(true);
    expect((await watcher.call("sessions.messages.subscribe", { key: "main" })).ok).toBe(true);
    const sender = await onNode(nodeA);

    const accepted = await sender.call("chat.send", {
      sessionKey: "main",
      message: "count",
      idempotencyKey: "run-ab-1",
    });
    expect(accepted.ok, JSON.stringify(accepted.error)).toBe(true);
    // live on B while A still runs: the first deltas arrive before the model is let go on
    await watcher.seen(
      (f) => f.payload?.runId === "run-ab-1" && carriesChunk(f, "two "),
      "node A's first deltas on node B",
    );
    const waiting = watcher.call("agent.wait", { runId: "run-ab-1", timeoutMs: 20_000 });
    gate.resolve();

    const waited = await waiting;
    expect(waited.ok, JSON.stringify(waited.error)).toBe(true);
    expect(waited.payload).toMatchObject({ runId: "run-ab-1", status: "ok" });
    await watcher.seen(isLifecycleEnd("run-ab-1"), "the run's end on node B");
    const chatFinal = await watcher.seen(
      (f) => f.event === "chat" && f.payload?.runId === "run-ab-1" && f.payload?.state === "final",
      "the chat final on node B",
    );
    expect(JSON.stringify(chatFinal.payload)).toContain("three four");

    // B saw what A's own client saw: the same events, the same seqs, none missing
    await sender.seen(isLifecycleEnd("run-ab-1"), "the run's end on node A");
    const onB = runEvents(watcher, "run-ab-1") as unknown as Ev[];
    const onA = runEvents(sender, "run-ab-1") as unknown as Ev[];
    expect(onB.map((e) => e.seq)).toEqual(Array.from({ length: onB.length }, (_, i) => i + 1));
    expect(onB).toEqual(onA);
    expect(
      onB
        .filter((e) => e.stream === "assistant")
        .map((e) => e.data.delta)
        .join(""),
    ).toBe("one two three four");

    // node C's client followed nothing: C read no event of A's run, and its client got none live
    const cBus = nodeC.gw.service.rt.bus as PgEventBus;
    await cBus.idle();
    expect(cBus.followStats()).toMatchObject({ reads: 0, events: 0 });
    expect(idle.all((f) => f.event === "agent" || f.event === "chat")).toEqual([]);
    await idle.seen(
      (f) =>
        f.event === "sessions.changed" && f.payload?.sessionKey === "agent:main:main" && f.payload?.reason === "status",
      "the run's status change on node C, from its pointers",
    );
    expect((nodeB.gw.service.rt.bus as PgEventBus).followStats().events).toBeGreaterThanOrEqual(onA.length);
    // and the node running it read nothing back for its own client: a local run takes the in-process path
    expect((nodeA.gw.service.rt.bus as PgEventBus).followStats()).toMatchObject({ reads: 0, events: 0 });

    // replay from node B reads the store
    const replay = await watcher.call("agent.events", { runId: "run-ab-1", afterSeq: 0 });
    expect(replay.ok, JSON.stringify(replay.error)).toBe(true);
    expect(((replay.payload?.events ?? []) as Ev[]).map((e) => e.seq)).toEqual(onA.map((e) => e.seq));
    expect(replay.payload).toMatchObject({ done: true });

    // the session node A created is announced on node B, and B reads its history from Postgres
    await watcher.seen(
      (f) =>
        f.event === "sessions.changed" &&
        f.payload?.sessionKey === "agent:main:main" &&
        f.payload?.reason === "created",
      "sessions.changed (created) on node B",
    );
    // and so are its transcript messages, read from Postgres by node B (the user's, then the assistant's)
    const reply = await watcher.seen(
      (f) =>
        f.event === "session.message" &&
        f.payload?.sessionKey === "agent:main:main" &&
        JSON.stringify(f.payload?.message).includes("one two three four"),
      "the assistant message on node B",
    );
    const messages = watcher.all((f) => f.event === "session.message").map((f) => f.payload?.messageSeq as number);
    expect(messages).toEqual([...messages].sort((x, y) => x - y));
    expect(messages).toContain(reply.payload?.messageSeq);
    expect(messages.length).toBeGreaterThanOrEqual(2);
    const history = await watcher.call("chat.history", { sessionKey: "main" });
    expect(history.ok, JSON.stringify(history.error)).toBe(true);
    expect(JSON.stringify(history.payload)).toContain("one two three four");
  });

  it("the same idempotency key sent to node A, then to node B, is one run: same runId, one model call", async () => {
    const gate = deferred();
    nodeA.provider.script = () => ({ before: ["once"], gate: gate.promise });
    const callsA = nodeA.provider.calls;
    const callsB = nodeB.provider.calls;
    const onA = await onNode(nodeA);
    const onB = await onNode(nodeB);
    const first = await onA.call("chat.send", { sessionKey: "idem", message: "hi", idempotencyKey: "key-1" });
    expect(first.ok, JSON.stringify(first.error)).toBe(true);
    // the repeat reaches B while the run is still going on A
    const again = onB.send("agent", { sessionKey: "idem", message: "hi", idempotencyKey: "key-1" });
    const acceptedAgain: Frame = await onB.response(again);
    expect(acceptedAgain.ok, JSON.stringify(acceptedAgain.error)).toBe(true);
    expect(acceptedAgain.payload?.runId).toBe(first.payload?.runId);
    gate.resolve();
    // the agent RPC's second answer is the run's final, heard from node A's run through the bus
    const final = await onB.response(again, 2);
    expect(final.ok, JSON.stringify(final.error)).toBe(true);
    expect(final.payload).toMatchObject({ runId: "key-1", status: "ok" });
    expect(nodeA.provider.calls - callsA).toBe(1);
    expect(nodeB.provider.calls - callsB).toBe(0);
  });
});
