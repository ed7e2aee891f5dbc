import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentEvent } from "../protocol/agent-events.js";
import type { EventBusPort } from "./bus-port.js";

/**
 * The EventBusPort conformance cases (Hono's common.case pattern): one file of cases, run by one `*.test.ts` per
 * implementation. `bus` publishes; `peer` is where another node (process) would listen: the same instance for the
 * in-process bus, a second connection for a cross-process one. `settle` resolves once everything emitted so far
 * has reached every listener (a no-op when delivery is synchronous).
 */
export interface BusUnderTest {
  bus: EventBusPort;
  peer: EventBusPort;
  settle(): Promise<void>;
  close(): Promise<void>;
}

export function eventBusConformance(name: string, open: () => Promise<BusUnderTest>): void {
  describe(`EventBusPort conformance: ${name}`, () => {
    let t: BusUnderTest;
    beforeEach(async () => {
      t = await open();
    });
    afterEach(async () => {
      await t.close();
    });

    it("numbers each run's events from 1 with no gap, each run on its own", async () => {
      const seen: AgentEvent[] = [];
      t.peer.subscribe((ev) => seen.push(ev));
      const a1 = t.bus.emit("run-a", "s1", "assistant", { delta: "a" });
      t.bus.emit("run-b", "s2", "assistant", { delta: "b" });
      const a2 = t.bus.emit("run-a", "s1", "assistant", { delta: "c" });
      await t.settle();
      expect([a1.seq, a2.seq]).toEqual([1, 2]);
      expect(seen.map((e) => `${e.runId}#${e.seq}`)).toEqual(["run-a#1", "run-b#1", "run-a#2"]);
      expect(seen[0]).toMatchObject({ sessionKey: "s1", stream: "assistant", data: { delta: "a" } });
    });

    it("a run listener hears only its run, in seq order, and nothing after it unsubscribes", async () => {
      const mine: number[] = [];
      const stop = t.peer.subscribeRun("run-a", (ev) => mine.push(ev.seq));
      for (let i = 0; i < 50; i++) {
        t.bus.emit("run-a", "s", "assistant", { delta: String(i) });
        t.bus.emit("run-b", "s", "assistant", { delta: String(i) });
      }
      await t.settle();
      stop();
      t.bus.emit("run-a", "s", "assistant", { delta: "late" });
      await t.settle();
      expect(mine).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    });

    it("a late subscriber sees the same numbers as an early one", async () => {
      const early: number[] = [];
      const late: number[] = [];
      t.peer.subscribeRun("r", (ev) => early.push(ev.seq));
      t.bus.emit("r", "s", "assistant", { delta: "1" });
      await t.settle();
      t.peer.subscribe((ev) => late.push(ev.seq));
      t.bus.emit("r", "s", "assistant", { delta: "2" });
      await t.settle();
      expect(early).toEqual([1, 2]);
      expect(late).toEqual([2]);
    });

    it("continues a run's numbering after resumeSeq (events stored before a restart)", async () => {
      t.bus.resumeSeq("r", 41);
      expect(t.bus.emit("r", "s", "lifecycle", { phase: "start", startedAt: 1 }).seq).toBe(42);
    });

    it("a listener that throws stops neither the other listeners nor the emit (a warning is expected here)", async () => {
      const heard: number[] = [];
      t.peer.subscribeRun("r", () => {
        throw new Error("listener bug (a warning is expected here)");
      });
      t.peer.subscribeRun("r", (ev) => heard.push(ev.seq));
      expect(t.bus.emit("r", "s", "assistant", { delta: "x" }).seq).toBe(1);
      await t.settle();
      expect(heard).toEqual([1]);
    });

    it("tells a run's end listeners once when the run completes, and starts a later run of that id from 1", async () => {
      let ended = 0;
      let other = 0;
      t.peer.onRunEnd("r", () => ended++);
      const stopOther = t.peer.onRunEnd("r", () => other++);
      stopOther();
      t.bus.emit("r", "s", "lifecycle", { phase: "start", startedAt: 1 });
      t.bus.endRun("r");
      t.bus.endRun("r");
      await t.settle();
      expect(ended).toBe(1);
      expect(other).toBe(0);
      expect(t.bus.emit("r", "s", "lifecycle", { phase: "start", startedAt: 1 }).seq).toBe(1);
    });
  });
}
