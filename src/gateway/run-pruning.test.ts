import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { RunRecord, RunStatus } from "../storage/types.js";
import { RUN_PRUNE_INTERVAL_MS, startRunPruning } from "./run-pruning.js";
import { startGateway } from "./server.js";

const HOUR = 3_600_000;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-prune-"));
  dirs.push(dir);
  return dir;
}

function record(runId: string, status: RunStatus, at: number): RunRecord {
  const ended = status === "queued" || status === "running" ? {} : { endedAt: at };
  return { runId, sessionKey: "agent:main:main", status, acceptedAt: at, ...ended, params: { message: runId } };
}

/** Timers that fire only when the test says so. */
function manualClock(start: number) {
  let now = start;
  let pending: { at: number; fn: () => void } | undefined;
  return {
    now: () => now,
    setTimeout(fn: () => void, ms: number) {
      pending = { at: now + ms, fn };
      return pending;
    },
    clearTimeout(handle: unknown) {
      if (pending === handle) pending = undefined;
    },
    advance(ms: number) {
      now += ms;
      const due = pending && pending.at <= now ? pending : undefined;
      if (due) {
        pending = undefined;
        due.fn();
      }
    },
  };
}

const ids = (store: SqliteStore) =>
  store
    .listRuns({})
    .map((r) => r.runId)
    .sort();

describe("run record pruning", () => {
  it("a gateway start prunes old finished run records and keeps queued ones", async () => {
    const dir = stateDir();
    const now = Date.now();
    const seed = new SqliteStore(path.join(dir, "loopgate.sqlite"));
    seed.createRun(record("old-ok", "ok", now - 48 * HOUR));
    seed.createRun(record("old-aborted", "aborted", now - 30 * HOUR));
    seed.createRun(record("recent-ok", "ok", now - HOUR));
    const event = (runId: string, seq: number) => ({
      runId,
      seq,
      ts: now,
      sessionKey: "agent:main:main",
      stream: "assistant",
      json: "{}",
    });
    seed.appendRunEvents([event("old-ok", 1), event("old-ok", 2), event("recent-ok", 1)]);
    seed.close();

    const gw = await startGateway({
      config: parseConfig({ session: { runResults: { maxAgeHours: 24 } } }),
      stateDir: dir,
      port: 0,
      logger: silentLogger,
    });
    await gw.close();
    const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
    expect(ids(store)).toEqual(["recent-ok"]);
    // a run's stored events go with its record
    expect(store.readRunEvents("old-ok")).toEqual([]);
    expect(store.readRunEvents("recent-ok").map((e) => e.seq)).toEqual([1]);
    store.close();
  });

  it("never touches a queued or running run, however old", () => {
    const dir = stateDir();
    const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
    const clock = manualClock(1_000 * HOUR);
    store.createRun(record("ancient-queued", "queued", 0));
    store.createRun(record("ancient-running", "running", 1));
    store.createRun(record("ancient-error", "error", 2));
    const pruning = startRunPruning({
      store: new SqliteStoreAdapter(store),
      limits: { maxAgeHours: 1, maxCount: 1 },
      clock,
      logger: silentLogger,
    });
    expect(ids(store)).toEqual(["ancient-queued", "ancient-running"]);
    pruning.stop();
    store.close();
  });

  it("the count cap drops the oldest finished records, then runs again hourly", () => {
    const dir = stateDir();
    const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
    const start = 1_000 * HOUR;
    const clock = manualClock(start);
    for (let i = 1; i <= 4; i++) store.createRun(record(`done-${i}`, "ok", start - (5 - i) * 1000));
    store.createRun(record("waiting", "queued", start - 10 * HOUR));
    const limits = { maxAgeHours: 24 * 7, maxCount: 2 };
    const pruning = startRunPruning({ store: new SqliteStoreAdapter(store), limits, clock, logger: silentLogger });
    expect(ids(store)).toEqual(["done-3", "done-4", "waiting"]);

    store.createRun(record("done-5", "ok", start + 1000));
    clock.advance(RUN_PRUNE_INTERVAL_MS - 1);
    expect(ids(store)).toContain("done-3"); // not yet an hour
    clock.advance(1);
    expect(ids(store)).toEqual(["done-4", "done-5", "waiting"]);

    pruning.stop();
    store.createRun(record("done-6", "ok", start + 2000));
    clock.advance(RUN_PRUNE_INTERVAL_MS);
    expect(ids(store)).toContain("done-4"); // stopped: no more passes
    store.close();
  });
});
