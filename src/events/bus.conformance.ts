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

export interface BusCapabilities {
  /** `peer` is another node (process): it hears `bus`'s runs as remote ones */
  separateNodes?: boolean;
}

export function eventBusConformance(name: string, open: () => Promise<BusUnderTest>, caps: BusCapabilities = {}): void {
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
      t.peer.watchSession("s1");
      t.peer.watchSession("s2");
      const a1 = t.bus.emit("run-a", "s1", "assistant", { delta: "a" });
      t.bus.emit("run-b", "s2", "assistant", { delta: "b" });
      const a2 = t.bus.emit("run-a", "s1", "assistant", { delta: "c" });
      await t.settle();
      expect([a1.seq, a2.seq]).toEqual([1, 2]);
      // order is promised within a run; across runs, another node may hear one run's batch before the other's
      const ofRun = (runId: string) => seen.filter((e) => e.runId === runId).map((e) => e.seq);
      expect(seen).toHaveLength(3);
      expect([ofRun("run-a"), ofRun("run-b")]).toEqual([[1, 2], [1]]);
      expect(seen.find((e) => e.runId === "run-a")).toMatchObject({
        sessionKey: "s1",
        stream: "assistant",
        data: { delta: "a" },
      });
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

    it("a local listener hears the runs its own process emits, and another node's only where they execute", async () => {
      const here: string[] = [];
      const there: string[] = [];
      t.bus.subscribeLocal((ev) => here.push(`${ev.runId}#${ev.seq}`));
      t.peer.subscribeLocal((ev) => there.push(`${ev.runId}#${ev.seq}`));
      t.peer.subscribe(() => {});
      t.peer.watchSession("s"); // the peer follows the run: still not its local listeners' business
      t.bus.emit("r", "s", "assistant", { delta: "x" });
      await t.settle();
      expect(here).toEqual(["r#1"]);
      expect(there).toEqual(caps.separateNodes ? [] : ["r#1"]);
    });

    // runs only where `peer` is another node (the in-process bus has one process: nothing is heard "remotely")
    it.runIf(caps.separateNodes)(
      "another node hears a long run live: every event once, with the emitter's seq, data and wire JSON, in order, and its end",
      async () => {
        const heard: AgentEvent[] = [];
        let ended = 0;
        t.peer.subscribe((ev) => heard.push(ev));
        t.peer.watchRun("long");
        t.peer.onRunEnd("long", () => ended++);
        const sent: AgentEvent[] = [];
        sent.push(t.bus.emit("long", "s", "lifecycle", { phase: "start", startedAt: 1 }));
        for (let i = 0; i < 1200; i++) {
          sent.push(t.bus.emit("long", "s", "assistant", { delta: `t${i}` }));
          if (i % 400 === 0) await t.settle(); // several batches, some read while others are written
        }
        sent.push(
          t.bus.emit("long", "s", "lifecycle", {
            phase: "end",
            startedAt: 1,
            endedAt: 2,
            status: "ok",
            stopReason: "stop",
            usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
          }),
        );
        t.bus.endRun("long");
        await t.settle();
        expect(heard.map((e) => e.seq)).toEqual(sent.map((e) => e.seq));
        expect(heard.map((e) => JSON.stringify(e))).toEqual(sent.map((e) => JSON.stringify(e)));
        expect(ended).toBe(1);
        expect(t.peer.spansNodes).toBe(true);
      },
    );

    it.runIf(caps.separateNodes)(
      "another node's run reaches a subscriber only while it is watched: a session watch begun mid-run gets it from seq 1, in order, and nothing after its release",
      async () => {
        const heard: string[] = [];
        t.peer.subscribe((ev) => heard.push(`${ev.runId}#${ev.seq}`));
        t.bus.emit("unwatched", "other", "lifecycle", { phase: "start", startedAt: 1 });
        t.bus.emit("mid", "watched", "lifecycle", { phase: "start", startedAt: 1 });
        t.bus.emit("mid", "watched", "assistant", { delta: "before the watch" });
        await t.settle();
        expect(heard).toEqual([]);
        const release = t.peer.watchSession("watched");
        t.bus.emit("mid", "watched", "assistant", { delta: "after it" });
        t.bus.emit("unwatched", "other", "assistant", { delta: "still nobody's" });
        await t.settle();
        expect(heard).toEqual(["mid#1", "mid#2", "mid#3"]);
        // a second watch of the same session, released: the first still holds it
        t.peer.watchSession("watched")();
        t.bus.emit("mid", "watched", "assistant", { delta: "still watched" });
        await t.settle();
        expect(heard).toEqual(["mid#1", "mid#2", "mid#3", "mid#4"]);
        release();
        t.bus.emit("mid", "watched", "assistant", { delta: "released" });
        await t.settle();
        expect(heard).toEqual(["mid#1", "mid#2", "mid#3", "mid#4"]);
      },
    );

    it.runIf(caps.separateNodes)(
      "a run watched after its first events went by (its model still thinking) is delivered whole from seq 1, then ends",
      async () => {
        const heard: number[] = [];
        let ended = 0;
        t.bus.emit("done", "s", "lifecycle", { phase: "start", startedAt: 1 });
        t.bus.emit("done", "s", "assistant", { delta: "x" });
        await t.settle();
        t.peer.subscribe((ev) => ev.runId === "done" && heard.push(ev.seq));
        t.peer.onRunEnd("done", () => ended++);
        t.peer.watchRun("done");
        t.bus.endRun("done");
        await t.settle();
        expect(heard).toEqual([1, 2]);
        expect(ended).toBe(1);
      },
    );

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
