/*
 * Issue 33 #5: `messages.queue.drop: "new"` refuses the newcomer also when the input was accepted by another node
 * and adopted by the session's owner (the accepting node could not see the owner's queue full). Two real gateways on
 * one Postgres schema, in this process; waits are bounded by the harness.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import {
  connectedPeer,
  deferred,
  type RawPeer,
  removeTempDirs,
  startTestGateway,
  type TestGateway,
} from "../fixtures/gateway/harness.js";

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("queue cap with drop new across two nodes", () => {
  let ts: TestSchema;
  let owner: TestGateway;
  let other: TestGateway;
  const peers: RawPeer[] = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    const config = {
      storage: { backend: "postgres", postgres: { url: ts.options.url, schema: ts.schema } },
      messages: { queue: { mode: "followup", debounceMs: 0, cap: 1, drop: "new" } },
    };
    owner = await startTestGateway({ config });
    other = await startTestGateway({ config });
  });
  afterAll(async () => {
    for (const p of peers) p.close();
    await owner?.gw.close();
    await other?.gw.close();
    await ts?.drop();
    removeTempDirs();
  });

  it("a message sent to another node while the owner's queue is full is refused at adoption; the queued one still runs", async () => {
    const gate = deferred();
    owner.provider.script = () => ({ before: ["working"], gate: gate.promise, after: [" done"] });
    const onOwner = await connectedPeer(owner.url);
    const onOther = await connectedPeer(other.url);
    peers.push(onOwner, onOther);

    const send = (peer: RawPeer, id: string) =>
      peer.call("agent", { sessionKey: "capped", message: id, idempotencyKey: id });
    expect((await send(onOwner, "hold")).ok).toBe(true);
    await onOwner.seen(
      (f) => f.payload?.runId === "hold" && f.payload?.stream === "assistant",
      "the held turn running",
    );
    const queued = await send(onOwner, "one");
    expect(queued.payload?.receipt).toMatchObject({ kind: "queued", position: 1 });

    // accepted and stored by the other node, which does not own the session; the owner adopts it at the cap
    const late = await send(onOther, "two");
    expect(late.ok, JSON.stringify(late.error)).toBe(true);
    const refused = await onOther.call("agent.wait", { runId: "two", timeoutMs: 20_000 });
    expect(refused.payload).toMatchObject({ runId: "two", status: "error" });
    expect(JSON.stringify(refused.payload)).toContain("messages.queue.cap");

    gate.resolve();
    for (const id of ["hold", "one"]) {
      const waited = await onOwner.call("agent.wait", { runId: id, timeoutMs: 20_000 });
      expect(waited.payload, id).toMatchObject({ runId: id, status: "ok" });
    }
  }, 60_000);
});
