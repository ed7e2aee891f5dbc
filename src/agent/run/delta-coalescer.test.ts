import { afterEach, describe, expect, it } from "vitest";
import { Cadence } from "../../infra/cadence.js";
import type { AgentEvent, AgentStream, AssistantData } from "../../protocol/agent-events.js";
import { ManualClock } from "../../testing/manual-clock.js";
import { coalescingEmitter, type DeltaCoalescer } from "./delta-coalescer.js";
import type { RunEmitter } from "./events.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

const WINDOW = 40;

/** A coalescer over a recording emitter: what went out, in order, with the clock's time when it did. */
function setup(windowMs = WINDOW) {
  const clock = new ManualClock(0);
  const sent: Array<{ stream: AgentStream; data: unknown; at: number }> = [];
  const base: RunEmitter = {
    emit: (stream, data) => {
      sent.push({ stream, data, at: clock.now() });
    },
  };
  const events = coalescingEmitter(base, windowMs > 0 ? new Cadence(clock, windowMs).lane("run") : undefined);
  const delta = (text: string, extra: Partial<AssistantData> = {}) =>
    events.emit("assistant", { delta: text, ...extra });
  return { clock, sent, events, delta, base };
}

describe("coalescing streamed deltas at the source", () => {
  it("deltas arriving within the coalesce window after the first go out as one assistant event carrying all of them", () => {
    const { clock, sent, delta } = setup();
    delta("Hel"); // the reply's first token is not held
    expect(sent.map((e) => e.data)).toEqual([{ delta: "Hel" }]);
    clock.advance(10);
    delta("lo");
    clock.advance(10);
    delta(", wor");
    clock.advance(10);
    delta("ld");
    expect(sent).toHaveLength(1);
    clock.advance(10); // the window since "Hel" went out ends
    expect(sent.map((e) => e.data)).toEqual([{ delta: "Hel" }, { delta: "lo, world" }]);
    expect(sent[1].at).toBe(40);
  });

  it("a delta is never held longer than the window, and the deltas joined are exactly what the model sent", () => {
    const { clock, sent, events } = setup();
    const arrivals: number[] = [];
    let text = "";
    // a chunk every 7 ms for 2 s, each numbered, so every one can be found in the events that carried it
    for (let i = 0; i < 300; i++) {
      const piece = ` ${i}`;
      text += piece;
      arrivals.push(clock.now());
      events.emit("assistant", { delta: piece });
      // 1 ms steps: ManualClock runs a due timer with the time at the end of the step
      for (let ms = 0; ms < 7; ms++) clock.advance(1);
    }
    for (let ms = 0; ms < WINDOW; ms++) clock.advance(1);
    const deltas = sent.map((e) => (e.data as AssistantData).delta);
    expect(deltas.join("")).toBe(text);
    expect(sent.length).toBeLessThan(300 / 4); // about one event per 40 ms instead of one per 7 ms
    let i = 0;
    for (const e of sent) {
      for (const piece of (e.data as AssistantData).delta.split(" ").slice(1)) {
        expect(Number(piece)).toBe(i);
        expect(e.at - arrivals[i]).toBeLessThanOrEqual(WINDOW);
        i++;
      }
    }
    expect(i).toBe(300);
  });

  it("two runs' held deltas go out on the same beat, whenever each run's last event went out", () => {
    const clock = new ManualClock(0);
    const beat = new Cadence(clock, WINDOW).lane("both runs");
    const sent: Array<{ run: string; delta: string; at: number }> = [];
    const runEmitter = (run: string) =>
      coalescingEmitter(
        { emit: (_stream, data) => sent.push({ run, delta: (data as AssistantData).delta, at: clock.now() }) },
        beat,
      );
    const a = runEmitter("a");
    const b = runEmitter("b");
    a.emit("assistant", { delta: "a1" }); // t=0, at once
    clock.advance(13);
    b.emit("assistant", { delta: "b1" }); // t=13, at once
    clock.advance(4);
    a.emit("assistant", { delta: "a2" }); // t=17, held
    clock.advance(9);
    b.emit("assistant", { delta: "b2" }); // t=26, held
    clock.advance(14); // t=40: the beat
    expect(sent).toEqual([
      { run: "a", delta: "a1", at: 0 },
      { run: "b", delta: "b1", at: 13 },
      { run: "a", delta: "a2", at: 40 },
      { run: "b", delta: "b2", at: 40 },
    ]);
  });

  it("a stream slower than the window gets every delta at once, with no timer", () => {
    const { clock, sent, delta } = setup();
    for (let i = 0; i < 5; i++) {
      delta(`t${i}`);
      expect(sent).toHaveLength(i + 1);
      expect(sent[i].at).toBe(clock.now());
      clock.advance(WINDOW);
    }
  });

  it("the final flushes everything pending before lifecycle end", () => {
    const { clock, sent, events, delta } = setup();
    delta("All ");
    clock.advance(5);
    delta("done");
    delta(".");
    const usage = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, total: 3 };
    events.emit("lifecycle", { phase: "end", startedAt: 0, endedAt: 5, status: "ok", stopReason: "stop", usage });
    expect(sent.map((e) => [e.stream, e.at])).toEqual([
      ["assistant", 0],
      ["assistant", 5],
      ["lifecycle", 5],
    ]);
    expect((sent[1].data as AssistantData).delta).toBe("done.");
    clock.advance(WINDOW * 2);
    expect(sent).toHaveLength(3); // the timer of the flushed delta was cancelled: nothing follows the end
  });

  it("tool call start flushes pending text first", () => {
    const { clock, sent, events, delta } = setup();
    delta("Let me ");
    clock.advance(1);
    delta("look.");
    events.emit("tool", { phase: "start", name: "read", toolCallId: "c1", args: { path: "a" } });
    expect(sent.map((e) => e.stream)).toEqual(["assistant", "assistant", "tool"]);
    expect(sent[1].data).toEqual({ delta: "look." });
  });

  it("flush sends the held delta at once (the end of an assistant message)", () => {
    const { clock, sent, events, delta } = setup();
    delta("a");
    clock.advance(1);
    delta("b");
    (events as DeltaCoalescer).flush();
    expect(sent.map((e) => (e.data as AssistantData).delta)).toEqual(["a", "b"]);
    (events as DeltaCoalescer).flush(); // nothing held: nothing sent
    expect(sent).toHaveLength(2);
  });

  it("a merged event carries the checkpoint's text plus the deltas after it", () => {
    const { clock, sent, delta } = setup();
    delta("One", { text: "One" });
    clock.advance(1);
    delta(" two");
    delta(" three", { text: "One two three" });
    delta(" four");
    clock.advance(WINDOW);
    expect(sent.map((e) => e.data)).toEqual([
      { text: "One", delta: "One" },
      { text: "One two three four", delta: " two three four" },
    ]);
  });

  it("a replace delta sends what is held first and starts an event of its own", () => {
    const { clock, sent, delta } = setup();
    delta("draft");
    clock.advance(1);
    delta(" more");
    delta("Final", { text: "Final", replace: true });
    delta(" answer");
    clock.advance(WINDOW);
    expect(sent.map((e) => e.data)).toEqual([
      { delta: "draft" },
      { delta: " more" },
      { text: "Final answer", delta: "Final answer", replace: true },
    ]);
  });

  it("switching from streamed reasoning to the answer sends the held reasoning first", () => {
    const { clock, sent, events, delta } = setup();
    events.emit("thinking", { text: "Hmm", delta: "Hmm" });
    clock.advance(1);
    events.emit("thinking", { delta: ", let me see" });
    delta("Yes.");
    clock.advance(WINDOW);
    expect(sent.map((e) => [e.stream, e.data])).toEqual([
      ["thinking", { text: "Hmm", delta: "Hmm" }],
      ["thinking", { delta: ", let me see" }],
      ["assistant", { delta: "Yes." }],
    ]);
  });

  it("coalescing off (no beat) is one event per chunk, through the plain emitter", () => {
    const { clock, sent, events, delta, base } = setup(0);
    expect(events).toBe(base);
    for (let i = 0; i < 10; i++) {
      delta(`t${i}`);
      clock.advance(1);
    }
    expect(sent.map((e) => (e.data as AssistantData).delta)).toEqual(Array.from({ length: 10 }, (_, i) => `t${i}`));
  });
});

describe("a run with coalescing on (the default window), end to end", () => {
  const harnesses: RunHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  const assistantData = (h: RunHarness, runId: string) =>
    h.events
      .filter((e): e is Extract<AgentEvent, { stream: "assistant" }> => e.runId === runId && e.stream === "assistant")
      .map((e) => e.data);

  it("a reply streamed faster than the window reaches clients in fewer events that rebuild it exactly, with gap-free seqs", async () => {
    const h = await startRunHarness({});
    harnesses.push(h);
    const pieces = Array.from({ length: 2000 }, (_, i) => ` w${i}`);
    h.enqueue({ text: pieces });
    const final = await h.send("write");
    expect(final.status).toBe("ok");
    const data = assistantData(h, final.runId);
    expect(data.length).toBeLessThan(pieces.length);
    let soFar = "";
    for (const d of data) {
      soFar += d.delta;
      if (d.text !== undefined) expect(d.text).toBe(soFar);
    }
    expect(soFar).toBe(pieces.join(""));
    const seqs = h.events.filter((e) => e.runId === final.runId).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const last = h.events.filter((e) => e.runId === final.runId).at(-1);
    expect(last?.stream).toBe("lifecycle");
  });

  it("agents.defaults.streamCoalesceMs: 0 sends one assistant event per model chunk", async () => {
    const h = await startRunHarness({
      config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, streamCoalesceMs: 0 } } }),
    });
    harnesses.push(h);
    const pieces = Array.from({ length: 200 }, (_, i) => ` w${i}`);
    h.enqueue({ text: pieces });
    const final = await h.send("write");
    expect(assistantData(h, final.runId).map((d) => d.delta)).toEqual(pieces);
  });

  it("the end of an assistant message sends its held text: the next message starts with a checkpoint of its own", async () => {
    const h = await startRunHarness({});
    harnesses.push(h);
    h.enqueue(
      { text: ["Let me ", "look."], toolCalls: [{ name: "read", arguments: { path: "nope.txt" } }] },
      { text: ["It is ", "not there."] },
    );
    const final = await h.send("read nope.txt");
    expect(final.status).toBe("ok");
    const run = h.events.filter((e) => e.runId === final.runId);
    const toolStart = run.findIndex((e) => e.stream === "tool");
    const before = run.slice(0, toolStart).filter((e) => e.stream === "assistant");
    const after = run.slice(toolStart).filter((e) => e.stream === "assistant");
    expect(before.map((e) => (e.data as AssistantData).delta).join("")).toBe("Let me look.");
    expect(after.map((e) => (e.data as AssistantData).delta).join("")).toBe("It is not there.");
    expect((after[0].data as AssistantData).text?.startsWith("It is ")).toBe(true);
  });
});
