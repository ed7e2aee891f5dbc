import { afterEach, describe, expect, it } from "vitest";
import { AgentEventBus } from "../infra/events.js";
import type { Logger } from "../infra/logger.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { AuditEventInput } from "../storage/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { AUDIT_DROP_LOG_INTERVAL_MS, AUDIT_FLUSH_DELAY_MS, AuditLedger } from "./audit-ledger.js";

/** lets the writes the store answers with promises settle (the store itself answered at once) */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

const stores: SqliteStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

function setup(opts: { queueSize?: number; failWrites?: () => boolean } = {}) {
  const clock = new ManualClock();
  const bus = new AgentEventBus({ now: () => clock.now() });
  const store = new SqliteStore(":memory:");
  stores.push(store);
  const batches: number[] = [];
  const warnings: string[] = [];
  const logger: Logger = { debug() {}, info() {}, error() {}, warn: (m) => warnings.push(m) };
  const ledger = new AuditLedger({
    store: {
      async appendAuditEvents(events: AuditEventInput[]) {
        if (opts.failWrites?.()) throw new Error("SQLITE_FULL: database or disk is full");
        batches.push(events.length);
        store.appendAuditEvents(events);
      },
    },
    clock,
    logger,
    queueSize: opts.queueSize ?? 100,
    actorOf: (runId) => (runId === "run-cli" ? "cli" : undefined),
  });
  ledger.attach(bus);
  const all = () => store.listAuditEvents({ limit: 1000 });
  /** a run that starts, calls one tool and ends: 4 audit rows (and 1 assistant event that makes none) */
  const run = (runId: string) => {
    bus.emit(runId, "agent:main:main", "lifecycle", { phase: "start", startedAt: clock.now() });
    bus.emit(runId, "agent:main:main", "tool", { phase: "start", name: "read", toolCallId: "c1", args: {} });
    bus.emit(runId, "agent:main:main", "tool", {
      phase: "result",
      name: "read",
      toolCallId: "c1",
      isError: false,
      result: "text",
    });
    bus.emit(runId, "agent:main:main", "assistant", { delta: "hi" });
    bus.emit(runId, "agent:main:main", "lifecycle", {
      phase: "end",
      startedAt: clock.now(),
      endedAt: clock.now(),
      status: "ok",
      stopReason: "stop",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
    });
  };
  return { clock, bus, store, ledger, batches, warnings, all, run };
}

describe("the audit ledger's write queue", () => {
  it("writes a run's rows after the batching delay in one transaction, with who started the run", async () => {
    const t = setup();
    t.run("run-cli");
    t.run("run-other");
    // nothing is written while the run's own code is still on the stack
    expect(t.all()).toHaveLength(0);
    expect(t.ledger.state()).toEqual({ backlog: 8, dropped: 0 });
    t.clock.advance(AUDIT_FLUSH_DELAY_MS);
    await settle();
    expect(t.batches).toEqual([8]);
    expect(t.ledger.state()).toEqual({ backlog: 0, dropped: 0 });
    const rows = t.all().reverse();
    expect(rows.map((r) => r.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(rows.slice(0, 4).map((r) => [r.action, r.actor])).toEqual([
      ["agent.run.started", "cli"],
      ["tool.action.started", "cli"],
      ["tool.action.finished", "cli"],
      ["agent.run.finished", "cli"],
    ]);
    expect(rows[4].actor).toBe("unknown");
  });

  it("when the queue is full it drops new rows and counts them, never blocks, and logs one line per minute", async () => {
    const t = setup({ queueSize: 3 });
    t.run("run-cli");
    t.run("run-cli");
    t.run("run-cli");
    expect(t.ledger.state()).toEqual({ backlog: 3, dropped: 9 });
    expect(t.warnings).toHaveLength(1);
    expect(t.warnings[0]).toMatch(
      /audit ledger: dropped 1 row\(s\): the write queue is full \(3 rows; audit\.queueSize\)/,
    );
    // the queue drains on its timer; later drops inside the same minute are summed into one line at its end
    t.clock.advance(AUDIT_FLUSH_DELAY_MS);
    await settle();
    expect(t.ledger.state()).toEqual({ backlog: 0, dropped: 9 });
    t.run("run-cli");
    t.run("run-cli");
    expect(t.ledger.state()).toEqual({ backlog: 3, dropped: 14 });
    expect(t.warnings).toHaveLength(1);
    t.clock.advance(AUDIT_DROP_LOG_INTERVAL_MS);
    await settle();
    expect(t.warnings).toHaveLength(2);
    expect(t.warnings[1]).toMatch(/dropped 13 row\(s\)/);
    expect(t.all()).toHaveLength(6);
  });

  it("close writes what is still queued and stops listening", async () => {
    const t = setup();
    t.run("run-cli");
    await t.ledger.close();
    expect(t.all()).toHaveLength(4);
    t.run("run-cli");
    t.clock.advance(AUDIT_FLUSH_DELAY_MS);
    await settle();
    expect(t.all()).toHaveLength(4);
  });

  it("a batch the store refuses (disk full) is counted as dropped, and later batches are written", async () => {
    let full = true;
    const t = setup({ failWrites: () => full });
    t.run("run-cli");
    t.clock.advance(AUDIT_FLUSH_DELAY_MS);
    await settle();
    expect(t.ledger.state()).toEqual({ backlog: 0, dropped: 4 });
    expect(t.warnings[0]).toMatch(/dropped 4 row\(s\): the store refused the write: SQLITE_FULL/);
    full = false;
    t.run("run-cli");
    t.clock.advance(AUDIT_FLUSH_DELAY_MS);
    await settle();
    expect(t.all()).toHaveLength(4);
  });
});
