import type { ChildProcess } from "node:child_process";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GatewayClient } from "../../dist/client/index.js";
import { type TestSchema, testPostgresUrl } from "../../dist/testing/postgres-schema.js";
import {
  type ClusterNodeProcess,
  closeCluster,
  connectTracked,
  openClusterSchema,
  printNodeLogsOnFailure,
  ROOMY_LEASE_MS,
  startNode,
} from "../fixtures/cluster/nodes.js";

// Three real gateway processes on one Postgres schema serve one fleet of sessions (issue 14, must-have 4 and 5):
// clients spread over the nodes, one session fed from all three at once. Bounded waits only; nothing asserts timing.

const children: ChildProcess[] = [];

type Row = { seq: number; run_id: string | null; role: string; text: string };

/** The session's transcript rows as stored, in seq order, with each message's role and text. */
async function transcript(pool: pg.Pool, sessionKey: string): Promise<Row[]> {
  const { rows } = await pool.query<{ seq: number; run_id: string | null; data: string }>(
    "SELECT seq, run_id, data FROM transcript WHERE session_key = $1 AND kind = 'message' ORDER BY generation, seq",
    [sessionKey],
  );
  return rows.map((r) => {
    const { message: m } = JSON.parse(r.data) as {
      message: { role: string; content: string | Array<{ type: string; text?: string }> };
    };
    const text = typeof m.content === "string" ? m.content : m.content.map((b) => b.text ?? "").join("");
    return { seq: r.seq, run_id: r.run_id, role: m.role, text };
  });
}

// Skipped without LOOPGATE_TEST_POSTGRES_URL: the nodes need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("three gateway nodes on one Postgres (real processes)", () => {
  let ts: TestSchema;
  let pool: pg.Pool;
  let nodes: ClusterNodeProcess[] = [];
  const clients: GatewayClient[] = [];

  beforeAll(async () => {
    let db: { url: string; schema: string };
    ({ ts, pool, db } = await openClusterSchema());
    nodes = await Promise.all(
      ["a", "b", "c"].map((n) =>
        startNode(n, db, { script: "medium.script.json5", leaseMs: ROOMY_LEASE_MS }, children),
      ),
    );
  }, 60_000);

  afterAll(() => closeCluster({ clients, children, pool, ts }));
  printNodeLogsOnFailure(() => nodes);

  const connect = (node: ClusterNodeProcess) => connectTracked(clients, node);

  it("clients spread over the nodes each complete turns in their own sessions", async () => {
    const work = Array.from({ length: 6 }, async (_, i) => {
      const client = await connect(nodes[i % 3]);
      const sessionKey = `spread-${i}`;
      for (let t = 1; t <= 3; t++) {
        const final = await client.agent({
          message: `client ${i} turn ${t}`,
          idempotencyKey: `spread-${i}-${t}`,
          sessionKey,
        });
        expect(final.status, `client ${i} turn ${t}`).toBe("ok");
      }
      const rows = await transcript(pool, `agent:main:${sessionKey}`);
      expect(rows.map((r) => r.text)).toEqual(
        [1, 2, 3].flatMap((t) => [`client ${i} turn ${t}`, `ran: client ${i} turn ${t}`]),
      );
    });
    await Promise.all(work);
  }, 60_000);

  it("one session fed from all three nodes at once: turns never interleave, each sender's order is kept, every message runs once", async () => {
    const sessionKey = "shared";
    const perSender = 4;
    const senders = await Promise.all(nodes.map((n) => connect(n)));
    const finals: Array<Promise<{ status: string }>> = [];
    const ids: string[] = [];
    await Promise.all(
      senders.map(async (client, s) => {
        for (let m = 1; m <= perSender; m++) {
          const idempotencyKey = `shared-${nodes[s].name}-${m}`;
          ids.push(idempotencyKey);
          // a sender sends its next message once the node has accepted the previous one, as a chat client does
          await new Promise<void>((accepted, failed) => {
            finals.push(
              client.agent(
                { message: `from ${nodes[s].name} #${m}`, idempotencyKey, sessionKey, queueMode: "followup" },
                { onAccepted: () => accepted() },
              ),
            );
            finals.at(-1)?.catch(failed);
          });
        }
      }),
    );
    const ended = await Promise.all(finals);
    expect(ended.map((f) => f.status)).toEqual(ended.map(() => "ok"));

    const rows = await transcript(pool, `agent:main:${sessionKey}`);
    // every accepted message ran exactly once: one user row and one answer each
    const users = rows.filter((r) => r.role === "user").map((r) => r.text);
    expect([...users].sort()).toEqual(
      nodes.flatMap((n) => Array.from({ length: perSender }, (_, m) => `from ${n.name} #${m + 1}`)).sort(),
    );
    expect(rows.filter((r) => r.role === "assistant").length).toBe(users.length);
    // never interleaved: each turn's rows are contiguous, its user row first, its answer right after
    for (let i = 0; i < rows.length; i += 2) {
      expect(rows[i].role).toBe("user");
      expect(rows[i + 1]).toMatchObject({ role: "assistant", text: `ran: ${rows[i].text}`, run_id: rows[i].run_id });
    }
    // each sender's messages ran in the order it sent them
    for (const n of nodes) {
      const mine = users.filter((u) => u.startsWith(`from ${n.name} `));
      expect(mine).toEqual(Array.from({ length: perSender }, (_, m) => `from ${n.name} #${m + 1}`));
    }
    const { rows: runs } = await pool.query<{ status: string }>("SELECT status FROM runs WHERE run_id = ANY($1)", [
      ids,
    ]);
    expect(runs.map((r) => r.status)).toEqual(ids.map(() => "ok"));
    // messages crossed nodes: some ran on a node other than the one that accepted them (node ids carry the pid)
    const { rows: ranOn } = await pool.query<{ run_id: string; node_id: string }>(
      "SELECT run_id, node_id FROM runs WHERE run_id = ANY($1)",
      [ids],
    );
    const pidOf = (name: string) => String(nodes.find((n) => n.name === name)?.child.pid);
    const crossed = ranOn.filter((r) => !r.node_id.includes(`-${pidOf(r.run_id.split("-")[1])}-`));
    expect(crossed.length).toBeGreaterThan(0);
    // one node ran the whole session at a time: no two runs of it overlapped
    const { rows: spans } = await pool.query<{ started_at: number; ended_at: number }>(
      "SELECT started_at, ended_at FROM runs WHERE run_id = ANY($1) ORDER BY started_at",
      [ids],
    );
    for (let i = 1; i < spans.length; i++) expect(spans[i].started_at).toBeGreaterThanOrEqual(spans[i - 1].ended_at);
  }, 60_000);

  it("a client on node A follows, live, the run its message started on node C (the session's owner)", async () => {
    const [a, , c] = nodes;
    const sessionKey = "followed";
    const onC = await connect(c);
    const onA = await connect(a);
    // node C owns the session: its client's messages keep it busy while A's message arrives
    let started!: () => void;
    const cStarted = new Promise<void>((r) => {
      started = r;
    });
    const cRuns = ["c1", "c2", "c3"].map((id, i) =>
      onC.agent(
        { message: `on c ${id}`, idempotencyKey: `followed-${id}`, sessionKey, queueMode: "followup" },
        { onEvent: (ev) => i === 0 && ev.stream === "lifecycle" && ev.data.phase === "start" && started() },
      ),
    );
    await cStarted;
    const seen: Array<{ seq: number; stream: string; phase?: unknown }> = [];
    const final = await onA.agent(
      { message: "from a", idempotencyKey: "followed-a", sessionKey, queueMode: "followup" },
      { onEvent: (ev) => seen.push({ seq: ev.seq, stream: ev.stream, phase: (ev.data as { phase?: unknown }).phase }) },
    );
    expect(final.status).toBe("ok");
    expect(JSON.stringify(final.result?.payloads)).toContain("ran: from a");
    for (const r of await Promise.all(cRuns)) expect(r.status).toBe("ok");
    // it ran on C (node ids carry the pid), and A's client saw its events as they came: in seq order, no gap
    const { rows } = await pool.query<{ node_id: string }>("SELECT node_id FROM runs WHERE run_id = 'followed-a'");
    expect(rows[0].node_id).toContain(`-${c.child.pid}-`);
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + seen[0].seq));
    expect(seen.some((e) => e.stream === "assistant")).toBe(true);
    expect(seen.filter((e) => e.stream === "lifecycle").map((e) => e.phase)).toEqual(["start", "end"]);
  }, 60_000);
});
