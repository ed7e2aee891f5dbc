import type { ChildProcess } from "node:child_process";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { GatewayClient } from "../../dist/client/index.js";
import { type TestSchema, testPostgresUrl } from "../../dist/testing/postgres-schema.js";
import {
  type ClusterNodeProcess,
  closeCluster,
  connectTracked,
  type NodeSpec,
  openClusterSchema,
  printNodeLogsOnFailure,
  ROOMY_LEASE_MS,
  startNode,
} from "../fixtures/cluster/nodes.js";
import { killHard } from "../fixtures/crash/gateway-process.js";

// A node of three dies (kill -9) mid-run with input queued behind the run, and another drains (SIGTERM) with input
// queued: the survivors report and run everything, once and in order. Real processes on one Postgres, on the
// database's clock; bounded polling only. The recovery time after the kill is measured and printed, not asserted.

// long enough that a node of a busy CI machine is not taken for dead while only slow (see ROOMY_LEASE_MS)
const LEASE_MS = ROOMY_LEASE_MS;
const children: ChildProcess[] = [];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Skipped without LOOPGATE_TEST_POSTGRES_URL: the nodes need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a node lost or drained among three (real processes)", () => {
  let ts: TestSchema;
  let pool: pg.Pool;
  let db: { url: string; schema: string };
  let survivors: ClusterNodeProcess[] = [];
  const clients: GatewayClient[] = [];

  beforeAll(async () => {
    ({ ts, pool, db } = await openClusterSchema());
    survivors = await Promise.all(
      ["b", "c"].map((n) => startNode(n, db, { script: "fast.script.json5", leaseMs: LEASE_MS }, children)),
    );
  }, 60_000);

  afterAll(() => closeCluster({ clients, children, pool, ts }));

  // what the nodes logged (takeovers, fenced writes, failed steps) is what explains a failure here
  const nodes: ClusterNodeProcess[] = [];
  /** the nodes a case starts for itself (the victim, the draining node) */
  let ownNodes: ClusterNodeProcess[] = [];
  printNodeLogsOnFailure(() => nodes);
  afterEach(() => {
    // A case that failed before its own node went away must not leave it running: it would sweep the next case's
    // sessions and run them with its own (slow) script.
    for (const n of ownNodes) if (n.child.exitCode === null && n.child.signalCode === null) n.child.kill("SIGKILL");
    ownNodes = [];
  });

  async function startOwnNode(name: string, spec: NodeSpec): Promise<ClusterNodeProcess> {
    const node = await startNode(name, db, spec, children);
    ownNodes.push(node);
    return node;
  }

  const connect = (node: ClusterNodeProcess) => {
    if (!nodes.includes(node)) nodes.push(node);
    return connectTracked(clients, node);
  };

  /**
   * Sends a message and resolves once it is accepted (its final is not waited for); rejects when it was refused. A
   * failure after acceptance (the victim's connection closing at the kill) changes nothing here.
   */
  function send(client: GatewayClient, sessionKey: string, id: string, onStart?: () => void): Promise<void> {
    return new Promise<void>((accepted, failed) => {
      client
        .agent(
          { message: `queued ${id}`, idempotencyKey: id, sessionKey, queueMode: "followup" },
          {
            onAccepted: () => accepted(),
            onEvent: (ev) => ev.stream === "lifecycle" && ev.data.phase === "start" && onStart?.(),
          },
        )
        .catch((err: Error) => failed(err));
    });
  }

  async function until<T>(read: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await read();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
      await pause(20);
    }
  }

  async function runRow(runId: string) {
    const { rows } = await pool.query<{ status: string; node_id: string | null; started_at: number | null }>(
      "SELECT status, node_id, started_at FROM runs WHERE run_id = $1",
      [runId],
    );
    return rows[0];
  }

  async function userRows(sessionKey: string): Promise<string[]> {
    const { rows } = await pool.query<{ data: string }>(
      "SELECT data FROM transcript WHERE session_key = $1 AND kind = 'message' ORDER BY generation, seq",
      [sessionKey],
    );
    return rows
      .map((r) => (JSON.parse(r.data) as { message: { role: string; content: unknown } }).message)
      .filter((m) => m.role === "user")
      .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
  }

  it("kill -9 of the node running a session: after the lease, a survivor reports the run node_lost and runs the queued input in order, once", async () => {
    const victim = await startOwnNode("a", { script: "slow.script.json5", leaseMs: LEASE_MS });
    const sessionKey = "lossy";
    const onVictim = await connect(victim);
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    await send(onVictim, sessionKey, "m1", () => started());
    await running;
    // queued behind the slow run, accepted by the other nodes: the owner (the victim) adopts them
    const [onB, onC] = [await connect(survivors[0]), await connect(survivors[1])];
    await send(onB, sessionKey, "m2");
    await send(onC, sessionKey, "m3");
    await send(onB, sessionKey, "m4");
    const victimNode = (await runRow("m1"))?.node_id as string;
    await until(
      async () => ((await runRow("m4"))?.node_id === victimNode ? true : undefined),
      "the victim adopts the queued inputs",
    );

    await killHard(victim);
    const killedAt = Date.now();
    const firstStart = await until(async () => (await runRow("m2"))?.started_at ?? undefined, "m2 starts elsewhere");
    const recoveryMs = firstStart - killedAt;
    console.info(
      `cluster kill -9 recovery: ${recoveryMs} ms from the kill to the first queued input running on a survivor (leaseMs ${LEASE_MS}, heartbeat every ${Math.floor(LEASE_MS / 3)} ms)`,
    );

    // agent.wait on a surviving node sees the lost run's end
    const lost = await onC.agentWait("m1", 20_000);
    expect(lost).toMatchObject({ status: "error", stopReason: "node_lost" });
    for (const id of ["m2", "m3", "m4"]) {
      expect((await onB.agentWait(id, 20_000)).status, `${id} ran on a survivor`).toBe("ok");
      expect((await runRow(id))?.node_id).not.toBe(victimNode);
    }
    // nothing lost, nothing run twice, in acceptance order
    expect(await userRows(`agent:main:${sessionKey}`)).toEqual(["queued m1", "queued m2", "queued m3", "queued m4"]);
    const { rows: events } = await pool.query<{ event: string }>(
      "SELECT event FROM run_events WHERE run_id = 'm1' ORDER BY seq",
    );
    const last = JSON.parse(events.at(-1)?.event ?? "{}") as { stream?: string; data?: { stopReason?: string } };
    expect(last).toMatchObject({ stream: "lifecycle", data: { stopReason: "node_lost" } });
  }, 60_000);

  it("SIGTERM drain of a node with queued input: its running turn finishes there, another node runs the rest at once", async () => {
    const draining = await startOwnNode("d", {
      script: "drain.script.json5",
      leaseMs: LEASE_MS,
      shutdownGraceMs: 10_000,
    });
    const sessionKey = "drained";
    const onD = await connect(draining);
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    await send(onD, sessionKey, "d1", () => started());
    await running;
    await send(onD, sessionKey, "d2");
    await send(onD, sessionKey, "d3");
    const drainingNode = (await runRow("d1"))?.node_id as string;
    const exited = new Promise<number | null>((r) => draining.child.once("exit", (code) => r(code)));
    draining.child.kill("SIGTERM");
    const onB = await connect(survivors[0]);
    expect((await onB.agentWait("d1", 20_000)).status).toBe("ok");
    for (const id of ["d2", "d3"]) {
      expect((await onB.agentWait(id, 20_000)).status, `${id} ran after the hand-off`).toBe("ok");
      expect((await runRow(id))?.node_id).not.toBe(drainingNode);
    }
    expect((await runRow("d1"))?.node_id).toBe(drainingNode);
    // a clean leave: the process exits 0, its node row is gone (so no survivor ever saw it dead)
    expect(await exited).toBe(0);
    expect(await userRows(`agent:main:${sessionKey}`)).toEqual(["queued d1", "queued d2", "queued d3"]);
    const { rows } = await pool.query("SELECT 1 FROM nodes WHERE id = $1", [drainingNode]);
    expect(rows).toEqual([]);
  }, 60_000);
});
