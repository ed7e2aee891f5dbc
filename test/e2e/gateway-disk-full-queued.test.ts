/*
 * Issue 25 item 8: a run whose first write hit a full disk was answered `error: storage full`, but its record stayed
 * `queued`; once space was back `agent.wait` said `pending` and the next start ran it again. A real full disk: the
 * gateway runs in this process with its state dir on a 2 MiB tmpfs that the test fills until ENOSPC (mounting needs
 * root; where it is not permitted the test is skipped with the reason printed, as gateway-disk-full.test.ts is).
 */
import fs from "node:fs";
import path from "node:path";
import type Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import {
  connectedPeer,
  deferred,
  isLifecycleEnd,
  startTestGateway,
  type TestGateway,
  TestProvider,
} from "../fixtures/gateway/harness.js";
import { fillUp, mountSmallTmpfs } from "../fixtures/gateway/small-tmpfs.js";

const cleanup: Array<() => void | Promise<void>> = [];
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const mounted = mountSmallTmpfs();
if ("reason" in mounted) console.log(`skipping the queued-run-on-a-full-disk test: ${mounted.reason}`);
else cleanup.push(mounted.unmount);

/** The gateway's own SQLite connection (the Store port over the engine, SqliteStoreAdapter.db). */
function dbOf(g: TestGateway): Database.Database {
  return (g.gw.service.rt.store as unknown as { db: { db: Database.Database } }).db.db;
}

describe.skipIf("reason" in mounted)("disk full: a queued run told 'storage full' (a real 2 MiB tmpfs)", () => {
  it("storage-full-run-is-not-run-again-after-space-returns", async () => {
    const { dir } = mounted as { dir: string };
    const stateDir = path.join(dir, "state");
    const gate = deferred();
    // call 0 holds the session while the second message waits behind it; any later call would be a re-run
    const provider = new TestProvider((_req, i) =>
      i === 0 ? { before: ["first "], gate: gate.promise, after: ["done"] } : { before: ["ran again"] },
    );
    const g = await startTestGateway({ stateDir, provider });
    let closed = false;
    cleanup.push(async () => {
      if (!closed) await g.gw.close();
    });
    const peer = await connectedPeer(g.url);
    const first = await peer.call("agent", { message: "hold the session", idempotencyKey: "holder" });
    expect(first.ok, JSON.stringify(first.error)).toBe(true);
    await peer.seen((f) => f.event === "agent" && f.payload?.stream === "assistant", "the holder's first delta");
    const queued = await peer.call("agent", { message: "waits its turn", idempotencyKey: "behind" });
    expect(queued.ok, JSON.stringify(queued.error)).toBe(true);
    const runId = String(queued.payload?.runId);

    // an empty WAL, then no free byte: the next write of any run needs space it cannot get
    const checkpoint = dbOf(g).pragma("wal_checkpoint(TRUNCATE)") as Array<{ busy: number }>;
    expect(checkpoint[0]?.busy).toBe(0);
    const filler = path.join(dir, "filler");
    fillUp(filler);
    gate.resolve();
    const end = await peer.seen(isLifecycleEnd(runId), "the queued run's end");
    const told = end.payload?.data as { phase?: string; error?: string };
    console.log(`the queued run ended on the full disk: phase=${told.phase} error=${told.error}`);
    expect(told.phase).toBe("error");
    expect(String(told.error)).toContain("storage full");

    fs.rmSync(filler);
    const afterSpace = await peer.call("agent.wait", { runId, timeoutMs: 2000 });
    console.log(`agent.wait once space is back: ${JSON.stringify(afterSpace.payload)}`);
    expect(afterSpace.payload?.status).toBe("error");
    expect(String(afterSpace.payload?.error)).toContain("storage full");
    // written by the gateway itself once space is back (its retry), not only at shutdown
    const store = g.gw.service.rt.store;
    let stored = await store.getRun(runId);
    for (let i = 0; i < 200 && stored?.status === "queued"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      stored = await store.getRun(runId);
    }
    console.log(`the stored record once space is back: status=${stored?.status} error=${stored?.error}`);
    expect(stored?.status).toBe("error");
    peer.close();
    await g.gw.close();
    closed = true;

    // the next start: recovery must not take the record for queued work
    const restarted = await startTestGateway({ stateDir, provider });
    cleanup.push(() => restarted.gw.close());
    const callsBefore = provider.calls;
    const peer2 = await connectedPeer(restarted.url);
    const afterRestart = await peer2.call("agent.wait", { runId, timeoutMs: 5000 });
    console.log(
      `agent.wait after a restart: ${JSON.stringify(afterRestart.payload)}; model calls since: ${provider.calls - callsBefore}`,
    );
    expect(afterRestart.payload?.status).toBe("error");
    expect(String(afterRestart.payload?.error)).toContain("storage full");
    expect(provider.calls - callsBefore).toBe(0);
    peer2.close();
  });
});
