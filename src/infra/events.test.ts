import { describe, expect, it } from "vitest";
import { type AgentEvent, AgentEventBus } from "./events.js";

describe("a run's own listener on the event bus", () => {
  it("hears only its run's events, numbered as every other subscriber sees them, until it unsubscribes", () => {
    const bus = new AgentEventBus({ now: () => 1 });
    const all: AgentEvent[] = [];
    const mine: AgentEvent[] = [];
    bus.subscribe((ev) => all.push(ev));
    const stop = bus.subscribeRun("run-a", (ev) => mine.push(ev));
    bus.emit("run-a", "s", "assistant", { delta: "one" });
    bus.emit("run-b", "s", "assistant", { delta: "other" });
    bus.emit("run-a", "s", "assistant", { delta: "two" });
    stop();
    bus.emit("run-a", "s", "assistant", { delta: "three" });

    expect(mine.map((e) => [e.seq, e.data])).toEqual([
      [1, { delta: "one" }],
      [2, { delta: "two" }],
    ]);
    expect(all.filter((e) => e.runId === "run-a").map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it("a listener that throws neither stops the run's other listeners nor the emit", () => {
    const bus = new AgentEventBus();
    const heard: string[] = [];
    bus.subscribeRun("r", () => {
      throw new Error("listener bug (a warning is expected here)");
    });
    bus.subscribeRun("r", (ev) => heard.push(ev.runId));
    expect(bus.emit("r", "s", "assistant", { delta: "x" }).seq).toBe(1);
    expect(heard).toEqual(["r"]);
  });
});
