/*
 * Spend control as an operator meets it (SPEC 25, issue 30): a real `loopgate gateway` child process, the OpenAI
 * Chat Completions provider against the fake model server whose usage is priced, real WebSockets, the real CLI
 * (`loopgate approvals`, `loopgate usage`) and the real SQLite file. The fake server's request log is the proof that
 * a refused call never reached the model. Run `npm run build` first.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { UsageSummaryResult } from "../../src/protocol/usage.js";
import { type FakeModelServer, startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import { cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";
import { connectedPeer, type RawPeer } from "../fixtures/gateway/harness.js";

useCliSandboxes();

const servers: FakeModelServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** $10 per million input tokens, $30 per million output: a call of 500 in / 100 out costs $0.008. */
const PRICE = { input: 10, output: 30, cacheRead: 0, cacheWrite: 0 };
const CALL_USAGE = { input: 500, output: 100 };
const CALL_USD = 0.008;

async function pricedModel(respond?: Parameters<typeof startFakeModelServer>[0]) {
  const server = await startFakeModelServer(respond ?? { respond: () => ({ text: "ok", usage: CALL_USAGE }) });
  servers.push(server);
  return server;
}

/** Waits until the schema's cost ledger holds `count` rows (a node writes its rows behind the calls). */
async function costRowsStored(ts: TestSchema, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: testPostgresUrl });
  await client.connect();
  try {
    for (;;) {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ts.schema}.cost_ledger`);
      if (rows[0].n >= count) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await client.end();
  }
}

function sandbox(prefix: string, server: FakeModelServer, extra: Record<string, unknown>) {
  const s = cliSandbox({ prefix });
  writeFileSync(
    s.config,
    JSON.stringify({
      agents: { defaults: { model: { primary: "fake/m" } } },
      models: {
        providers: {
          fake: {
            api: "openai-completions",
            baseUrl: server.baseUrl,
            apiKey: "sk-test",
            models: [{ id: "m", cost: PRICE }],
          },
        },
      },
      ...extra,
    }),
  );
  return s;
}

/** Sends one `agent` request and waits for its final answer (or its refusal). */
async function turn(peer: RawPeer, key: string, message = "hi") {
  const id = peer.send("agent", { message, idempotencyKey: key });
  const first = await peer.response(id);
  if (!first.ok) return first;
  return peer.response(id, 2);
}

describe("budgets checked before every model call", () => {
  it("a day budget of $0.01 for agent main: turns run until the spend crosses it, then the next call and the next turn are refused before any model request", {
    timeout: 60_000,
  }, async () => {
    const server = await pricedModel();
    const s = sandbox("budget-day", server, {
      limits: { budgets: [{ id: "main-daily", scope: "agent", match: "main", window: "day", maxUsd: 0.01 }] },
    });
    const gw = await s.gateway();
    const peer = await connectedPeer(gw.url, { scopes: ["operator.admin"] });

    // turn 1: $0.008 of $0.01
    expect((await turn(peer, "t1")).payload).toMatchObject({ status: "ok" });
    // turn 2: its first call starts under the limit ($0.008), so it runs and crosses it ($0.016)
    server.enqueue({ toolCalls: [{ name: "read", arguments: { path: "nothing.txt" } }], usage: CALL_USAGE });
    const second = await turn(peer, "t2");
    // ...and its next call (after the tool) is refused before it reaches the model
    expect(server.requests).toHaveLength(2);
    expect(second.payload).toMatchObject({ status: "error" });
    expect(JSON.stringify(second.payload)).toContain(
      "budget main-daily (day) exhausted: spent $0.0160 of $0.0100 (the run spent $0.0080 (600 tokens) in 1 model call(s))",
    );
    const ended = peer.frames.find(
      (f) =>
        f.event === "agent" &&
        (f.payload as { runId?: string; data?: { phase?: string } }).runId === "t2" &&
        (f.payload as { data?: { phase?: string } }).data?.phase === "error",
    );
    expect(ended?.payload).toMatchObject({ data: { kind: "budget_exceeded", status: "error" } });

    // turn 3: the day's window is used up, so intake refuses it: nothing stored, no model request
    const third = await turn(peer, "t3");
    expect(third.ok).toBe(false);
    expect(third.error).toMatchObject({ code: "budget_exceeded" });
    expect(third.error?.message).toContain("budget main-daily (day) exhausted: spent $0.0160 of $0.0100");
    expect(server.requests).toHaveLength(2);

    const usage = await s.run(["usage", "--config", s.config, "--url", gw.url, "--by", "agent", "--json"]).done;
    expect(usage.code, usage.stderr).toBe(0);
    const summary = JSON.parse(usage.stdout) as UsageSummaryResult;
    peer.close();
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);

    // `loopgate usage --by agent --json` totals equal the sum of the per-call rows
    const db = new Database(path.join(s.tmp, "state", "loopgate.sqlite"), { readonly: true });
    const rows = db.prepare("SELECT agent_id, total_tokens, cost_usd FROM cost_ledger").all() as Array<{
      agent_id: string;
      total_tokens: number;
      cost_usd: number;
    }>;
    const audit = db.prepare("SELECT action, status, code FROM audit_events WHERE action = 'intake.refused'").all();
    const stored = db.prepare("SELECT count(*) AS n FROM runs WHERE run_id = 't3'").get() as { n: number };
    db.close();
    expect(rows).toHaveLength(2);
    const sumUsd = rows.reduce((a, r) => a + r.cost_usd, 0);
    expect(summary.total.usd).toBeCloseTo(sumUsd, 9);
    expect(summary.total.usd).toBeCloseTo(2 * CALL_USD, 9);
    expect(summary.total.tokens).toBe(rows.reduce((a, r) => a + r.total_tokens, 0));
    expect(summary.total.calls).toBe(2);
    expect(summary.groups).toEqual([expect.objectContaining({ key: "main", calls: 2 })]);
    expect(audit).toEqual([{ action: "intake.refused", status: "blocked", code: "budget_exceeded" }]);
    expect(stored.n).toBe(0);
    const log = (await gw.done).stdout + (await gw.done).stderr;
    expect(log).toContain("budget stop: run t2");
    expect(log).toContain("intake refused (budget_exceeded)");
  });

  it("a pause budget: the run waits (waiting for budget), is allowed once from `loopgate approvals`, and completes", {
    timeout: 60_000,
  }, async () => {
    const server = await pricedModel();
    const s = sandbox("budget-pause", server, {
      limits: { budgets: [{ id: "ask-first", scope: "global", window: "day", maxUsd: 0.005, action: "pause" }] },
    });
    const gw = await s.gateway();
    const peer = await connectedPeer(gw.url, { scopes: ["operator.admin"] });
    expect((await turn(peer, "p1")).payload).toMatchObject({ status: "ok" });

    const id = peer.send("agent", { message: "more", idempotencyKey: "p2" });
    expect((await peer.response(id)).ok).toBe(true);
    const requested = await peer.next((f) => f.event === "budget.approval.requested", "budget.approval.requested");
    const approval = requested.payload as { id: string; budget: string; spent: number; limit: number };
    expect(approval).toMatchObject({ budget: "ask-first", limit: 0.005 });
    expect(approval.spent).toBeCloseTo(CALL_USD, 9);
    const waiting = peer.frames.find(
      (f) => f.event === "agent" && (f.payload as { data?: { for?: string } }).data?.for === "budget",
    );
    expect(waiting?.payload).toMatchObject({ runId: "p2", data: { phase: "waiting", approvalId: approval.id } });
    // nothing reached the model while it waited
    expect(server.requests).toHaveLength(1);

    const listed = await s.run(["approvals", "list", "--config", s.config, "--url", gw.url]).done;
    expect(listed.stdout).toContain(`${approval.id}  budget ask-first (day): spent $0.0080 of $0.0050`);
    const allowed = await s.run(["approvals", "allow", approval.id, "--config", s.config, "--url", gw.url]).done;
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain("allowed one more model call");

    expect((await peer.response(id, 2)).payload).toMatchObject({ status: "ok" });
    expect(server.requests).toHaveLength(2);
    peer.close();
    gw.child.kill("SIGTERM");
    const out = await gw.done;
    expect(out.stdout + out.stderr).toContain("budget pause: run p2");
    const db = new Database(path.join(s.tmp, "state", "loopgate.sqlite"), { readonly: true });
    const paused = db.prepare("SELECT run_id, status, code FROM audit_events WHERE action = 'budget.paused'").all();
    db.close();
    expect(paused).toEqual([{ run_id: "p2", status: "blocked", code: "ask-first" }]);
  });

  it("a runaway loop (the model calls a tool forever) ends at limits.run.maxModelCalls with the spend reported", {
    timeout: 60_000,
  }, async () => {
    const server = await pricedModel({
      respond: () => ({ toolCalls: [{ name: "read", arguments: { path: "again.txt" } }], usage: CALL_USAGE }),
    });
    const s = sandbox("runaway", server, { limits: { run: { maxModelCalls: 4 } } });
    const gw = await s.gateway();
    const r = await s.agent(["--url", gw.url, "--message", "loop", "--json"]).done;
    expect(server.requests).toHaveLength(4);
    expect(r.code).not.toBe(0);
    // newline-delimited events, then the result
    const lines = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const error = lines.find((l) => l.stream === "lifecycle" && l.data?.phase === "error");
    expect(error?.data).toMatchObject({ kind: "budget_exceeded" });
    expect(error?.data.error).toBe(
      "budget limits.run.maxModelCalls (run) exhausted: spent 4 model calls of 4 model calls (the run spent $0.0320 (2,400 tokens) in 4 model call(s))",
    );
    // the run's result reports what it cost
    expect(r.stdout).toContain('"costUsd":0.032');
    gw.child.kill("SIGTERM");
    await gw.done;
  });
});

describe("rate limits per token", () => {
  it("a token with runsPerMinute 5 gets rate_limited on the 6th run within a minute, with retryAfterMs; nothing stored", {
    timeout: 60_000,
  }, async () => {
    const server = await pricedModel();
    const s = sandbox("rate", server, {
      // the default for tokens without their own limits: here the single gateway.auth.token's
      limits: { tokens: { runsPerMinute: 1 } },
      gateway: {
        auth: {
          token: "root-token",
          tokens: [{ token: "bridge-token", name: "bridge", scopes: ["operator.write"], limits: { runsPerMinute: 5 } }],
        },
      },
    });
    const gw = await s.gateway();
    const peer = await connectedPeer(gw.url, { token: "bridge-token" });
    for (let i = 1; i <= 5; i++) expect((await turn(peer, `r${i}`)).payload).toMatchObject({ status: "ok" });
    const sixth = await turn(peer, "r6");
    expect(sixth.ok).toBe(false);
    expect(sixth.error).toMatchObject({ code: "rate_limited", retryable: true });
    expect(sixth.error?.retryAfterMs).toBeGreaterThan(0);
    expect(sixth.error?.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(sixth.error?.message).toContain("gateway.auth.tokens[0].limits.runsPerMinute is 5");
    expect(server.requests).toHaveLength(5);
    // another token is not limited by this one's count
    const root = await connectedPeer(gw.url, { token: "root-token" });
    expect((await turn(root, "root-1")).payload).toMatchObject({ status: "ok" });
    const rootAgain = await turn(root, "root-2");
    expect(rootAgain.error?.message).toContain("limits.tokens.runsPerMinute is 1");
    // the cost ledger knows whose calls they were
    const usage = await s.run([
      "usage",
      "--config",
      s.config,
      "--url",
      gw.url,
      "--by",
      "token",
      "--json",
      "--token",
      "root-token",
    ]).done;
    const byToken = JSON.parse(usage.stdout) as UsageSummaryResult;
    expect(byToken.groups.map((g) => [g.key, g.calls]).sort()).toEqual([
      ["bridge", 5],
      ["gateway", 1],
    ]);
    peer.close();
    root.close();
    gw.child.kill("SIGTERM");
    const out = await gw.done;
    expect(out.stdout + out.stderr).toContain("intake refused (rate_limited)");
    const db = new Database(path.join(s.tmp, "state", "loopgate.sqlite"), { readonly: true });
    const stored = db.prepare("SELECT count(*) AS n FROM runs WHERE run_id = 'r6'").get() as { n: number };
    const audit = db.prepare("SELECT code FROM audit_events WHERE action = 'intake.refused'").all();
    db.close();
    expect(stored.n).toBe(0);
    expect(audit).toEqual([{ code: "rate_limited:runsPerMinute" }, { code: "rate_limited:runsPerMinute" }]);
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: the nodes need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("one budget across two gateway nodes on Postgres", () => {
  let ts: TestSchema;
  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
  });
  afterAll(async () => {
    await ts?.drop();
  });

  it("two gateway processes enforce one day budget together: node A refuses once node B's call crossed it", {
    timeout: 90_000,
  }, async () => {
    const server = await pricedModel({ respond: () => ({ text: "ok", usage: CALL_USAGE }) });
    const extra = {
      storage: { backend: "postgres", postgres: { schema: ts.schema } },
      // a long sync interval: only the nodes' spend notices can tell A about B's call in time
      limits: {
        syncIntervalMs: 600_000,
        budgets: [{ id: "fleet-daily", scope: "global", window: "day", maxUsd: 0.01 }],
      },
    };
    const env = { LOOPGATE_POSTGRES_URL: testPostgresUrl };
    const a = sandbox("fleet-a", server, extra);
    const b = sandbox("fleet-b", server, extra);
    const nodeA = await a.gateway(["--port", "0"], env);
    const nodeB = await b.gateway(["--port", "0"], env);
    const peerA = await connectedPeer(nodeA.url, { scopes: ["operator.admin"] });
    const peerB = await connectedPeer(nodeB.url, { scopes: ["operator.admin"] });

    // A spends $0.008 (its window sum is loaded now, at $0), then B spends $0.008: B loads its window after A's call,
    // when A's row may be in the ledger and A's notice may come before, during or after B's read; A's call counts
    // once on B ($0.008, under $0.01) whichever way (limits/window-sums.ts). Counted twice, B refused its own call.
    expect((await turn(peerA, "fa-1")).payload).toMatchObject({ status: "ok" });
    const onB = peerB.send("chat.send", { sessionKey: "b-side", message: "hi", idempotencyKey: "fb-1" });
    expect((await peerB.response(onB)).ok).toBe(true);
    const final = await peerB.seen(
      (f) =>
        f.event === "chat" && f.payload?.runId === "fb-1" && ["final", "error"].includes(f.payload?.state as string),
    );
    expect(final.payload).toMatchObject({ state: "final" });
    expect(server.requests).toHaveLength(2);
    // B's notice goes out with its cost row's commit (a run-event batch, within 50 ms of the call): until the row is
    // stored, A may still admit a call (docs/architecture.md, spend control across nodes)
    await costRowsStored(ts, 2);

    // A never read the ledger again: it refuses because it heard B's call ($0.016 ≥ $0.01)
    const third = await turn(peerA, "fa-2");
    expect(third.error).toMatchObject({ code: "budget_exceeded" });
    expect(third.error?.message).toContain("budget fleet-daily (day) exhausted: spent $0.0160 of $0.0100");
    expect(server.requests).toHaveLength(2);

    // usage from either node sums both nodes' rows
    const usage = await a.run(["usage", "--config", a.config, "--url", nodeA.url, "--json"], { env }).done;
    // a failed command prints nothing on stdout: say why instead of "Unexpected end of JSON input"
    expect(usage.code, usage.stderr).toBe(0);
    expect((JSON.parse(usage.stdout) as UsageSummaryResult).total).toMatchObject({ calls: 2 });
    for (const p of [peerA, peerB]) p.close();
    for (const n of [nodeA, nodeB]) n.child.kill("SIGTERM");
    for (const n of [nodeA, nodeB]) expect((await n.done).code).toBe(0);
  });
});
