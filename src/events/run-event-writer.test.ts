/*
 * The event store writer over a real SQLite file: batching off the hot path, reading what is not written yet, and
 * what a failing store does to it (and does not do to the run). Time is a ManualClock; the "next turn of the event
 * loop" is a queue the test runs by hand.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AgentEventBus } from "../infra/events.js";
import type { Logger } from "../infra/logger.js";
import { CostLedger } from "../limits/cost-ledger.js";
import { isTransientPostgresError } from "../storage/postgres/transient-errors.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { CostRow } from "../storage/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { AuditLedger } from "./audit-ledger.js";
import { agentEventJson } from "./event-json.js";
import { RunEventWriter, type RunEventWriterOptions } from "./run-event-writer.js";

let dir: string;
let store: SqliteStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-events-"));
  store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
});

afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** lets the writes the store answers with promises settle (the store itself answered at once) */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

function recordingLogger() {
  const lines: string[] = [];
  const logger: Logger = {
    debug() {},
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  };
  return { logger, lines };
}

/** `storePace`: the writer's own pace for the store's kind; else the tests' 50 ms (timings below are written for it) */
function setup(opts: Partial<RunEventWriterOptions> = {}, storePace = false) {
  const clock = new ManualClock();
  const bus = new AgentEventBus({ now: () => clock.now() });
  const soon: Array<() => void> = [];
  const { logger, lines } = recordingLogger();
  const writer = new RunEventWriter({
    store: new SqliteStoreAdapter(store),
    clock,
    logger,
    defer: (fn) => soon.push(fn),
    // SQLite's rule (node/compose.ts): no store error is a server outage
    isTransientStoreError: () => false,
    ...(storePace ? {} : { flushDelayMs: 50 }),
    ...opts,
  });
  writer.attach(bus);
  const stream = (runId: string, n: number) => {
    for (let i = 0; i < n; i++) bus.emit(runId, "agent:main:main", "assistant", { delta: `t${i}` });
  };
  const runSoon = () => {
    for (const fn of soon.splice(0)) fn();
  };
  return { clock, bus, writer, lines, stream, runSoon };
}

const seqs = (runId: string) => store.readRunEvents(runId).map((e) => e.seq);
const diskFull = () => Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });

describe("writing run events off the hot path", () => {
  it("a streamed reply reaches the store in one transaction after the flush delay, not one write per token", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    const append = vi.spyOn(store, "appendRunEvents");
    stream("r1", 100);
    expect(append).not.toHaveBeenCalled();
    expect(seqs("r1")).toEqual([]);
    clock.advance(50);
    await settle();
    expect(append).toHaveBeenCalledTimes(1);
    expect(seqs("r1")).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(writer.stats).toMatchObject({ stored: 100, buffered: 0, dropped: 0 });
  });

  // Streaming at scale: a SQLite commit rewrites every index page it touched, one per streaming run, so fewer and
  // fuller commits cost less CPU per event; on Postgres the commit is how other nodes hear the run, so it stays prompt.
  it("a single node's stream is stored every 200 ms, while a Postgres node's still reaches the other nodes in 50 ms", async () => {
    const sqlite = setup({}, true);
    const append = vi.spyOn(store, "appendRunEvents");
    sqlite.stream("r1", 30);
    sqlite.clock.advance(50);
    await settle();
    expect(append).not.toHaveBeenCalled();
    sqlite.clock.advance(150);
    await settle();
    expect(seqs("r1")).toHaveLength(30);

    const adapter = new SqliteStoreAdapter(store);
    const shared = setup({ store: Object.assign(Object.create(adapter), { kind: "postgres" }) }, true);
    shared.stream("r2", 30);
    shared.clock.advance(50);
    await settle();
    expect(seqs("r2")).toHaveLength(30);
  });

  it("a full batch is written on the next turn of the event loop without waiting for the delay", async () => {
    const { writer, stream, runSoon } = setup({ flushDelayMs: 60_000, batchSize: 10 });
    const append = vi.spyOn(store, "appendRunEvents");
    stream("r1", 25);
    expect(append).not.toHaveBeenCalled(); // never inside the emit
    runSoon();
    await settle();
    expect(append.mock.calls.map(([events]) => events.length)).toEqual([10]);
    for (let turn = 0; turn < 5 && writer.stats.buffered > 0; turn++) {
      runSoon();
      await settle();
    }
    expect(append.mock.calls.map(([events]) => events.length)).toEqual([10, 10, 5]);
    expect(writer.stats.stored).toBe(25);
  });

  // Regression (streaming at scale): a backlog of batches was written back to back in one turn of the event loop,
  // which stalled every stream of the gateway for as long as all of them took (hundreds of ms at 1,000 streams).
  it("a backlog is written one transaction per turn of the event loop, so sockets are served in between", async () => {
    const { writer, stream, runSoon } = setup({ flushDelayMs: 60_000, batchSize: 10 });
    const append = vi.spyOn(store, "appendRunEvents");
    stream("r1", 40);
    runSoon();
    await settle();
    // one transaction, then the writer waits for the next turn (its deferred continuation is queued)
    expect(append).toHaveBeenCalledTimes(1);
    expect(writer.stats.buffered).toBe(30);
    runSoon();
    await settle();
    expect(append).toHaveBeenCalledTimes(2);
    // close writes the rest without waiting for more turns: nothing streams any more
    const closed = writer.close();
    runSoon(); // the turn the writer was waiting for
    await closed;
    expect(append).toHaveBeenCalledTimes(4);
    expect(seqs("r1")).toHaveLength(40);
  });

  it("serializes each event once: the writer and the broadcaster share the JSON, and the store keeps it as sent", async () => {
    const { clock, bus, writer } = setup();
    const stringify = vi.spyOn(JSON, "stringify");
    const sent = bus.emit("r1", "agent:main:main", "lifecycle", { phase: "start", startedAt: 5 });
    const wire = agentEventJson(sent); // what the broadcaster does when it delivers the event
    clock.advance(50);
    await settle();
    expect(stringify).toHaveBeenCalledTimes(1);
    stringify.mockRestore();
    expect(store.readRunEvents("r1")).toEqual([
      { runId: "r1", seq: 1, ts: sent.ts, sessionKey: "agent:main:main", stream: "lifecycle", json: wire },
    ]);
    expect(JSON.parse(wire)).toEqual(sent);
    expect(writer.stats.stored).toBe(1);
  });

  it("events not written yet are readable: stored ones first, then the buffered ones, in seq order", async () => {
    const { clock, writer, stream } = setup();
    stream("r1", 3);
    stream("other", 2);
    clock.advance(50);
    await settle();
    stream("r1", 2);
    expect(seqs("r1")).toEqual([1, 2, 3]);
    expect((await writer.read("r1")).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect((await writer.read("r1", { afterSeq: 2 })).map((e) => e.seq)).toEqual([3, 4, 5]);
    expect((await writer.read("r1", { afterSeq: 1, limit: 3 })).map((e) => e.seq)).toEqual([2, 3, 4]);
    expect((await writer.read("r1", { afterSeq: 4 })).map((e) => JSON.parse(e.json).data)).toEqual([{ delta: "t1" }]);
    expect(await writer.lastSeq("r1")).toBe(5);
    expect(await writer.lastSeq("other")).toBe(2);
    expect(await writer.lastSeq("nobody")).toBe(0);
  });

  it("close writes what is buffered and stops listening", async () => {
    const { bus, writer, stream } = setup();
    stream("r1", 4);
    await writer.close();
    expect(seqs("r1")).toEqual([1, 2, 3, 4]);
    bus.emit("r1", "agent:main:main", "assistant", { delta: "after close" });
    expect(writer.stats.buffered).toBe(0);
  });
});

describe("waiting for a run's events to be written (the end notice on Postgres)", () => {
  it("runs that end within the delay share one transaction: waiting for their events does not write them early", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    const append = vi.spyOn(store, "appendRunEvents");
    let firstWritten = false;
    stream("r1", 3);
    void writer.written().then(() => {
      firstWritten = true;
    });
    clock.advance(10);
    stream("r2", 2);
    const secondWritten = writer.written();
    await settle();
    expect(append).not.toHaveBeenCalled();
    expect(firstWritten).toBe(false);
    clock.advance(40);
    await secondWritten;
    expect(firstWritten).toBe(true);
    expect(append).toHaveBeenCalledTimes(1);
    expect([seqs("r1"), seqs("r2")]).toEqual([
      [1, 2, 3],
      [1, 2],
    ]);
  });

  it("resolves at once when nothing waits to be written, and only for the events taken in before it was asked", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    await writer.written();
    stream("r1", 2);
    clock.advance(50);
    await settle();
    stream("r1", 1); // a later event does not hold back the wait for the earlier ones
    let done = false;
    void writer.written().then(() => {
      done = true;
    });
    await settle();
    expect(done).toBe(false);
    clock.advance(50);
    await settle();
    expect(done).toBe(true);
  });

  it("keeps waiting while the disk is full, and resolves once the retry wrote the events", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    vi.spyOn(store, "appendRunEvents").mockImplementationOnce(() => {
      throw diskFull();
    });
    stream("r1", 2);
    let done = false;
    void writer.written().then(() => {
      done = true;
    });
    clock.advance(50);
    await settle();
    expect(done).toBe(false);
    clock.advance(100);
    await settle();
    expect(done).toBe(true);
    expect(seqs("r1")).toEqual([1, 2]);
  });

  it("resolves when the events are dropped instead (a batch the store refuses, or the store closing)", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    vi.spyOn(store, "appendRunEvents").mockImplementation(() => {
      throw new Error("something unexpected");
    });
    stream("r1", 2);
    const refused = writer.written();
    clock.advance(50);
    await refused;
    expect(writer.stats.dropped).toBe(2);
    vi.spyOn(store, "appendRunEvents").mockImplementation(() => {
      throw diskFull();
    });
    stream("r1", 1);
    const closing = writer.written();
    await writer.close();
    await closing;
    expect(writer.stats.dropped).toBe(3);
  });
});

describe("a run's end notice riding the event batches (Postgres: no commit of its own)", () => {
  /** what each batch the store got held: its events' seqs and the ends announced with it */
  function batches() {
    const seen: Array<{ events: string[]; ends: string[] }> = [];
    let inBatch = false;
    vi.spyOn(store, "appendLedgerBatch").mockImplementation(function (this: SqliteStore, batch) {
      seen.push({
        events: batch.runEvents.map((e) => `${e.runId}:${e.seq}`),
        ends: (batch.runEnds ?? []).map((e) => `${e.runId}:${e.seq}`),
      });
      inBatch = true;
      try {
        return SqliteStore.prototype.appendLedgerBatch.call(this, batch);
      } finally {
        inBatch = false;
      }
    });
    // a batch with nothing riding it is the events' insert alone
    vi.spyOn(store, "appendRunEvents").mockImplementation(function (this: SqliteStore, events) {
      if (!inBatch) seen.push({ events: events.map((e) => `${e.runId}:${e.seq}`), ends: [] });
      return SqliteStore.prototype.appendRunEvents.call(this, events);
    });
    return seen;
  }

  it("a run's end goes out with the batch that stores its last events, not in a write of its own", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    const seen = batches();
    stream("r1", 3);
    let announced = false;
    void writer.announceEnd({ runId: "r1", seq: 3 }).then(() => {
      announced = true;
    });
    await settle();
    expect(seen).toEqual([]);
    clock.advance(50);
    await settle();
    expect(announced).toBe(true);
    expect(seen).toEqual([{ events: ["r1:1", "r1:2", "r1:3"], ends: ["r1:3"] }]);
  });

  it("an end never goes out in a batch before the one holding its run's last events (a backlog of full batches)", async () => {
    const { writer, stream, runSoon } = setup({ flushDelayMs: 50, batchSize: 2 });
    const seen = batches();
    stream("r1", 3);
    const done = writer.announceEnd({ runId: "r1", seq: 3 });
    for (let i = 0; i < 5; i++) {
      runSoon();
      await settle();
    }
    await done;
    expect(seen).toEqual([
      { events: ["r1:1", "r1:2"], ends: [] },
      { events: ["r1:3"], ends: ["r1:3"] },
    ]);
  });

  it("an end whose events are all stored waits for the delay and goes in a batch of its own, shared with other ends", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    stream("r1", 2);
    clock.advance(50);
    await settle();
    const seen = batches();
    const first = writer.announceEnd({ runId: "r1", seq: 2 });
    clock.advance(10);
    const second = writer.announceEnd({ runId: "merged", seq: 0 });
    await settle();
    expect(seen).toEqual([]);
    clock.advance(40);
    await Promise.all([first, second]);
    expect(seen).toEqual([{ events: [], ends: ["r1:2", "merged:0"] }]);
  });

  it("an end in a batch the disk refuses is kept for the retry that stores its events: it never precedes them", async () => {
    const { clock, writer, stream } = setup({ flushDelayMs: 50 });
    const seen = batches();
    vi.mocked(store.appendLedgerBatch).mockImplementationOnce(() => {
      throw diskFull();
    });
    stream("r1", 2);
    let announced = false;
    void writer.announceEnd({ runId: "r1", seq: 2 }).then(() => {
      announced = true;
    });
    clock.advance(50);
    await settle();
    expect(announced).toBe(false);
    expect(seqs("r1")).toEqual([]);
    clock.advance(100);
    await settle();
    expect(announced).toBe(true);
    expect(seqs("r1")).toEqual([1, 2]);
    expect(seen).toEqual([{ events: ["r1:1", "r1:2"], ends: ["r1:2"] }]);
  });

  it("a closed writer refuses an end, so the bus sends it itself", async () => {
    const { writer, stream } = setup({ flushDelayMs: 50 });
    const seen = batches();
    stream("r1", 1);
    const beforeClose = writer.announceEnd({ runId: "r1", seq: 1 });
    await writer.close();
    await beforeClose;
    expect(seen).toEqual([{ events: ["r1:1"], ends: ["r1:1"] }]);
    await expect(writer.announceEnd({ runId: "r2", seq: 1 })).rejects.toThrow(/closed/);
  });
});

describe("audit and cost rows riding the event batches", () => {
  function withLedgers() {
    const adapter = new SqliteStoreAdapter(store);
    const parts = setup({ flushDelayMs: 50, store: adapter });
    const audit = new AuditLedger({
      store: adapter,
      clock: parts.clock,
      logger: recordingLogger().logger,
      queueSize: 100,
      actorOf: () => "cli",
      newId: (() => {
        let n = 0;
        return () => `a${++n}`;
      })(),
    });
    audit.attach(parts.bus);
    const cost = new CostLedger({
      store: adapter,
      clock: parts.clock,
      logger: recordingLogger().logger,
      queueSize: 100,
    });
    parts.writer.carry(audit.rider());
    parts.writer.carry(cost.rider());
    const row: CostRow = {
      id: "c1",
      ts: 5,
      runId: "r1",
      sessionKey: "agent:main:main",
      agentId: "main",
      provider: "fake",
      model: "m",
      inputTokens: 1,
      outputTokens: 2,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      totalTokens: 3,
    };
    const start = () => {
      parts.bus.emit("r1", "agent:main:main", "lifecycle", { phase: "start", startedAt: 5 });
      cost.add(row);
      parts.stream("r1", 3);
    };
    return { ...parts, adapter, audit, cost, start };
  }

  it("a run's events, its audit row and its cost row are stored in one transaction, not three", async () => {
    const { clock, adapter, audit, cost, start } = withLedgers();
    const calls = ["appendLedgerBatch", "appendRunEvents", "appendAuditEvents", "appendCostRows"] as const;
    const spies = calls.map((m) => vi.spyOn(adapter, m));
    start();
    expect(cost.unwritten().map((r) => r.id)).toEqual(["c1"]);
    clock.advance(50);
    await settle();
    expect(spies.map((s) => s.mock.calls.length)).toEqual([1, 0, 0, 0]);
    expect(seqs("r1")).toEqual([1, 2, 3, 4]);
    expect(store.listAuditEvents({ limit: 10 }).map((r) => r.action)).toEqual(["agent.run.started"]);
    expect(store.listCostRows({ limit: 10 }).map((r) => r.id)).toEqual(["c1"]);
    expect(cost.unwritten()).toEqual([]);
    // their own timers find nothing left to write
    clock.advance(200);
    await audit.flush();
    await cost.flush();
    expect(spies.map((s) => s.mock.calls.length)).toEqual([1, 0, 0, 0]);
    expect(audit.state()).toEqual({ backlog: 0, dropped: 0 });
  });

  it("a batch the disk refuses gives the rows back: the ledgers write theirs alone, the events are retried", async () => {
    const { clock, adapter, audit, cost, writer, start } = withLedgers();
    vi.spyOn(adapter, "appendLedgerBatch").mockImplementationOnce(async () => {
      throw diskFull();
    });
    start();
    clock.advance(50);
    await settle();
    await audit.flush();
    await cost.flush();
    expect(store.listAuditEvents({ limit: 10 }).map((r) => r.action)).toEqual(["agent.run.started"]);
    expect(store.listCostRows({ limit: 10 }).map((r) => r.id)).toEqual(["c1"]);
    expect(seqs("r1")).toEqual([]);
    expect(writer.stats).toMatchObject({ buffered: 4, failedWrites: 1 });
    clock.advance(100);
    await settle();
    expect(seqs("r1")).toEqual([1, 2, 3, 4]);
    expect(audit.state().dropped).toBe(0);
  });
});

describe("a store that fails", () => {
  it("a full disk keeps the events in memory and retries; the run's emits never fail and nothing is lost", async () => {
    const { clock, bus, writer, lines, stream } = setup({ flushDelayMs: 50 });
    const append = vi.spyOn(store, "appendRunEvents");
    append.mockImplementationOnce(() => {
      throw diskFull();
    });
    append.mockImplementationOnce(() => {
      throw diskFull();
    });
    stream("r1", 5);
    clock.advance(50);
    await settle();
    expect(writer.stats).toMatchObject({ stored: 0, buffered: 5, failedWrites: 1, dropped: 0 });
    // the run goes on: more events while the disk is full
    expect(bus.emit("r1", "agent:main:main", "assistant", { delta: "still streaming" }).seq).toBe(6);
    expect((await writer.read("r1")).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    clock.advance(100); // the retry backs off: 50 ms, then 100 ms
    await settle();
    expect(writer.stats.failedWrites).toBe(2);
    clock.advance(200);
    await settle();
    expect(seqs("r1")).toEqual([1, 2, 3, 4, 5, 6]);
    expect(writer.stats).toMatchObject({ stored: 6, buffered: 0, failedWrites: 2, dropped: 0 });
    // one line when the fault starts (not one per retry), one when it ends
    expect(lines).toEqual([
      "warn run events: cannot write to the store; keeping them in memory and retrying",
      "info run events: the store takes writes again",
    ]);
  });

  it("while the store cannot be written the buffer stays bounded: the oldest events are dropped and counted", async () => {
    const { clock, writer, lines, stream } = setup({ maxBuffered: 5 });
    vi.spyOn(store, "appendRunEvents").mockImplementation(() => {
      throw diskFull();
    });
    stream("r1", 8);
    clock.advance(50);
    await settle();
    expect(writer.stats).toMatchObject({ buffered: 5, dropped: 3, stored: 0 });
    expect((await writer.read("r1")).map((e) => e.seq)).toEqual([4, 5, 6, 7, 8]);
    expect(lines.some((l) => l.includes("dropping the oldest"))).toBe(true);
  });

  // The buffer is a queue read from a head index (each event over the bound used to be spliced out of the array, a
  // copy of the whole buffer per streamed token): dropping, reading and writing must agree on where it starts.
  it("a buffer far over its bound keeps exactly the newest events, and writes them all once the store recovers", async () => {
    const { clock, writer, stream, runSoon } = setup({ maxBuffered: 1500, batchSize: 100 });
    const failing = vi.spyOn(store, "appendRunEvents").mockImplementation(() => {
      throw diskFull();
    });
    stream("r1", 5000);
    clock.advance(50);
    await settle();
    expect(writer.stats).toMatchObject({ buffered: 1500, dropped: 3500, stored: 0 });
    const kept = Array.from({ length: 1500 }, (_, i) => 3501 + i);
    expect((await writer.read("r1")).map((e) => e.seq)).toEqual(kept);
    failing.mockRestore();
    clock.advance(100);
    for (let turn = 0; turn < 20 && writer.stats.buffered > 0; turn++) {
      runSoon();
      await settle();
    }
    expect(seqs("r1")).toEqual(kept);
    expect(writer.stats).toMatchObject({ buffered: 0, stored: 1500, dropped: 3500 });
  });

  it("a database another process keeps locked is retried like a full disk, not dropped", async () => {
    const { clock, writer, stream } = setup();
    vi.spyOn(store, "appendRunEvents").mockImplementationOnce(() => {
      throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
    });
    stream("r1", 3);
    clock.advance(50);
    await settle();
    expect(writer.stats).toMatchObject({ dropped: 0, buffered: 3, failedWrites: 1 });
    clock.advance(50);
    await settle();
    expect(seqs("r1")).toEqual([1, 2, 3]);
  });

  it("a Postgres server that went away (terminated connection, restart) is retried like a full disk, not dropped", async () => {
    const { clock, writer, stream } = setup({ isTransientStoreError: isTransientPostgresError });
    vi.spyOn(store, "appendRunEvents")
      .mockImplementationOnce(() => {
        throw new Error("Connection terminated unexpectedly");
      })
      .mockImplementationOnce(() => {
        throw Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
      });
    stream("r1", 3);
    clock.advance(50);
    await settle();
    expect(writer.stats).toMatchObject({ dropped: 0, buffered: 3, failedWrites: 1 });
    clock.advance(100);
    await settle();
    expect(writer.stats).toMatchObject({ dropped: 0, buffered: 3, failedWrites: 2 });
    clock.advance(200);
    await settle();
    expect(seqs("r1")).toEqual([1, 2, 3]);
  });

  it("a batch that fails for another reason is dropped (counted, logged), and the next batch is written", async () => {
    const { clock, writer, lines, stream } = setup();
    vi.spyOn(store, "appendRunEvents").mockImplementationOnce(() => {
      throw new Error("something unexpected");
    });
    stream("r1", 3);
    clock.advance(50);
    await settle();
    expect(writer.stats).toMatchObject({ dropped: 3, buffered: 0, failedWrites: 1 });
    expect(lines).toEqual([expect.stringMatching(/^warn run events: 3 event\(s\) not stored: .*something unexpected/)]);
    stream("r1", 2);
    clock.advance(50);
    await settle();
    expect(seqs("r1")).toEqual([4, 5]);
  });

  it("a seq written twice keeps the first and is reported once, not per event", async () => {
    const { clock, bus, writer, lines } = setup();
    bus.emit("r1", "agent:main:main", "assistant", { delta: "first" });
    clock.advance(50);
    await settle();
    bus.endRun("r1"); // a bug that numbers the run from 1 again
    bus.emit("r1", "agent:main:main", "assistant", { delta: "again" });
    bus.emit("r1", "agent:main:main", "assistant", { delta: "new" });
    clock.advance(50);
    await settle();
    expect(store.readRunEvents("r1").map((e) => JSON.parse(e.json).data.delta)).toEqual(["first", "new"]);
    expect(writer.stats).toMatchObject({ duplicates: 1, stored: 2 });
    expect(lines.filter((l) => l.includes("already stored"))).toHaveLength(1);
  });
});
