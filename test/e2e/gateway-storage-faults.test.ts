/*
 * Storage faults through a real gateway: a database that cannot grow (SQLITE_FULL, simulated with
 * PRAGMA max_page_count on the gateway's own connection) must not take the process down.
 */
import type Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  connectedPeer,
  deferred,
  isLifecycleEnd,
  type TestGateway,
  TestProvider,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

/**
 * The gateway's own connection: max_page_count is a per-connection limit, so it must be set there. The runtime's
 * store is the Store port over the SQLite engine (SqliteStoreAdapter.db), which holds the connection.
 */
function dbOf(g: TestGateway): Database.Database {
  return (g.gw.service.rt.store as unknown as { db: { db: Database.Database } }).db.db;
}

/** The database may not grow past its current size: the next write that needs a new page fails with SQLITE_FULL. */
function fillDisk(g: TestGateway): void {
  const db = dbOf(g);
  db.pragma("wal_checkpoint(TRUNCATE)");
  const pages = db.pragma("page_count", { simple: true }) as number;
  db.pragma(`max_page_count = ${pages}`);
}

function freeDisk(g: TestGateway): void {
  dbOf(g).pragma("max_page_count = 1073741823");
}

const big = (n: number) => "x".repeat(n);

describe("a full disk kills the gateway (simulated with max_page_count)", () => {
  it("new input is refused as retryable 'storage full' naming the state dir, health says degraded, and it recovers", async () => {
    const g = await gateway();
    const peer = await connectedPeer(g.url);
    const first = await peer.call("agent", { message: "warm up", idempotencyKey: "warm" });
    await peer.seen(isLifecycleEnd(String(first.payload?.runId)), "the warm-up run's end");

    fillDisk(g);
    const refused = await peer.call("agent", { message: big(200_000), idempotencyKey: "full-1" });
    expect(refused.ok).toBe(false);
    expect(refused.error?.code).toBe("unavailable");
    expect(refused.error?.retryable).toBe(true);
    expect(refused.error?.message).toContain("storage full");
    expect(refused.error?.message).toContain(g.stateDir);

    const health = await peer.call("health");
    expect(health.ok).toBe(true);
    expect(health.payload?.ok).toBe(false);
    expect(health.payload?.degraded).toMatchObject({ reason: "storage full", stateDir: g.stateDir });

    // a small message is refused too while degraded: the next write could be the one that fails mid-run
    const small = await peer.call("agent", { message: "tiny", idempotencyKey: "full-2" });
    expect(small.error?.code).toBe("unavailable");

    freeDisk(g);
    const after = await peer.call("health");
    expect(after.payload?.ok).toBe(true);
    expect(after.payload?.degraded).toBeUndefined();
    const again = await peer.call("agent", { message: "space is back", idempotencyKey: "full-3" });
    expect(again.ok).toBe(true);
    await peer.seen(isLifecycleEnd(String(again.payload?.runId)), "the run after recovery ends");
  });

  it("a run in flight when the disk fills is recorded as failed and the gateway keeps serving", async () => {
    const gate = deferred();
    const provider = new TestProvider((_req, i) =>
      i === 0 ? { before: ["partial "], gate: gate.promise, after: [big(300_000)] } : { before: ["later"] },
    );
    const g = await gateway({ provider });
    const peer = await connectedPeer(g.url);
    const accepted = await peer.call("agent", { message: "go", idempotencyKey: "inflight" });
    const runId = String(accepted.payload?.runId);
    await peer.seen((f) => f.event === "agent" && f.payload?.stream === "assistant", "the first delta");
    fillDisk(g);
    gate.resolve();
    const end = await peer.seen(isLifecycleEnd(runId), "the run's end");
    expect((end.payload?.data as { phase?: string } | undefined)?.phase).toBe("error");
    const wait = await peer.call("agent.wait", { runId, timeoutMs: 5000 });
    expect(wait.payload?.status).toBe("error");
    expect(String(wait.payload?.error)).toContain("storage full");
    const health = await peer.call("health");
    expect(health.payload?.ok).toBe(false);
  });
});
