/*
 * Issue 33 #4: an operator's "allow always" answered on node A holds on node B's next run, and a skill switch made on
 * one node holds on the other: both live in the shared store (operator_settings), not in a node's state dir. Two real
 * gateways on one Postgres schema, in this process; the real exec tool runs /bin/sh in a temp workspace. Waits are
 * bounded; nothing asserts how long anything took.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelRequest } from "../../src/providers/types.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import {
  connectedPeer,
  type Frame,
  type RawPeer,
  removeTempDirs,
  startTestGateway,
  type TestGateway,
  TestProvider,
  tempStateDir,
} from "../fixtures/gateway/harness.js";

/** The model asks for `echo shared-ok` once, then answers after reading the tool's result. */
const asksForEcho = (req: ModelRequest) =>
  req.messages.at(-1)?.role === "toolResult"
    ? { before: ["done"] }
    : { toolCalls: [{ id: `call-${req.messages.length}`, name: "exec", arguments: { command: "echo shared-ok" } }] };

const isEvent = (name: string) => (f: Frame) => f.type === "event" && f.event === name;

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("operator answers shared by two nodes", () => {
  let ts: TestSchema;
  let pool: pg.Pool;
  let nodeA: TestGateway;
  let nodeB: TestGateway;
  const peers: RawPeer[] = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    pool = new pg.Pool({ connectionString: ts.options.url, options: `-c search_path=${ts.schema}` });
    for (const name of ["a", "b"]) {
      const node = await startTestGateway({
        provider: new TestProvider(asksForEcho),
        config: {
          agents: { defaults: { model: { primary: "t/m" }, workspace: tempStateDir() } },
          storage: { backend: "postgres", postgres: { url: ts.options.url, schema: ts.schema } },
          cluster: { workspace: "affinity" },
        },
      });
      if (name === "a") nodeA = node;
      else nodeB = node;
    }
  });
  afterAll(async () => {
    for (const p of peers) p.close();
    await nodeA?.gw.close();
    await nodeB?.gw.close();
    await pool?.end();
    await ts?.drop();
    removeTempDirs();
  });

  const connect = async (node: TestGateway, scopes: string[]) => {
    const peer = await connectedPeer(node.url, { scopes });
    peers.push(peer);
    return peer;
  };

  it("allow-always answered on node A: node B's next run of the same command runs without asking", async () => {
    const operatorA = await connect(nodeA, ["operator.approvals", "operator.read"]);
    const writerA = await connect(nodeA, ["operator.write"]);
    const operatorB = await connect(nodeB, ["operator.approvals", "operator.read"]);
    const writerB = await connect(nodeB, ["operator.write"]);

    const onA = writerA.send("agent", { sessionKey: "on-a", message: "greet", idempotencyKey: "ask-a" });
    const requested = (await operatorA.next(isEvent("exec.approval.requested"), "the request on node A")).payload;
    expect(requested).toMatchObject({ command: "echo shared-ok", runId: "ask-a" });
    const answer = await operatorA.call("exec.approval.resolve", { id: requested?.id, decision: "allow-always" });
    expect(answer.ok, JSON.stringify(answer.error)).toBe(true);
    expect((await writerA.response(onA, 2)).payload).toMatchObject({ runId: "ask-a", status: "ok" });
    // the answer is in the shared store, not in node A's state dir (written just after the answer: polled, bounded)
    let stored = 0;
    for (let i = 0; i < 200 && stored === 0; i++) {
      stored = (await pool.query("SELECT 1 FROM operator_settings WHERE key LIKE 'exec.allowAlways.%'")).rowCount ?? 0;
      if (stored === 0) await new Promise((r) => setTimeout(r, 25));
    }
    expect(stored).toBe(1);

    const onB = writerB.send("agent", { sessionKey: "on-b", message: "greet", idempotencyKey: "run-b" });
    expect((await writerB.response(onB, 2)).payload).toMatchObject({ runId: "run-b", status: "ok" });
    expect(operatorB.all(isEvent("exec.approval.requested"))).toEqual([]);
    const result = writerB.all(
      (f) =>
        f.event === "agent" &&
        f.payload?.runId === "run-b" &&
        f.payload?.stream === "tool" &&
        (f.payload?.data as { phase?: string })?.phase === "result",
    )[0];
    expect(JSON.stringify(result?.payload)).toContain("shared-ok");
  }, 60_000);
});
