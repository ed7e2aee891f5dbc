import { describe, expect, it } from "vitest";
import type { QueueSessionView } from "../queue/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { ActivityTracker } from "./activity.js";
import { classifySession, defaultAbortMs, type SessionSnapshot } from "./classify.js";

const WARN = 1000;
const ABORT = 3000;
const T = { warnMs: WARN, abortMs: ABORT };
const KEY = "agent:main:s";

/**
 * One session, driven through the real activity tracker by bus-shaped events on a fake clock; the queue's view is
 * written by hand so every bookkeeping state (including broken ones) can be set up.
 */
function session(clock: ManualClock) {
  const tracker = new ActivityTracker(() => clock.now());
  let seq = 0;
  const ev = (runId: string, stream: string, data: Record<string, unknown>) =>
    // biome-ignore lint/suspicious/noExplicitAny: bus events built by hand for the tracker
    tracker.onEvent({ runId, seq: ++seq, stream, ts: clock.now(), sessionKey: KEY, data } as any);
  const queue = (view: Partial<QueueSessionView>): QueueSessionView => ({
    sessionKey: KEY,
    generation: 7,
    processingSince: clock.now(),
    queued: 0,
    ...view,
  });
  const snap = (q?: QueueSessionView): SessionSnapshot => ({
    sessionKey: KEY,
    queue: q,
    activities: tracker.bySession().get(KEY) ?? [],
  });
  return { tracker, ev, queue, snap };
}

const running = (runId = "r1", merged: string[] = []) => ({ runId, phase: "running" as const, merged });

describe("stuck-session classes on a fake clock (SPEC 13)", () => {
  it("stuckSessionAbortMs defaults to at least 5 minutes and 3 × the warn threshold", () => {
    expect(defaultAbortMs(120_000)).toBe(360_000);
    expect(defaultAbortMs(1000)).toBe(300_000);
  });

  it("nothing is reported while progress is seen within the warn threshold", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running() });
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    for (let i = 0; i < 10; i++) {
      clock.advance(WARN - 1);
      s.ev("r1", "assistant", { delta: "x" });
      expect(classifySession(s.snap(q), clock.now(), T)).toBeUndefined();
    }
  });

  it.each([
    ["the active run waits for its lanes", "waiting", "lane"],
    ["the active run waits for the session write lock", "waiting", "session_lock"],
    ["the active run waits for an exec approval", "waiting", "approval"],
    ["the active run waits out a model retry's backoff", "waiting", "retry"],
  ])("session.long_running while %s, however long (a wait is never a stall)", (_what, activity, waitingFor) => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running() });
    if (waitingFor === "retry") {
      s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
      s.tracker.started("r1", KEY);
      s.tracker.ended("r1", KEY);
      s.ev("r1", "lifecycle", { phase: "retry", attempt: 1, delayMs: 30_000, reason: "429", model: "m" });
    } else if (waitingFor !== "lane") {
      s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
      s.ev("r1", "lifecycle", { phase: "waiting", for: waitingFor });
    }
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.long_running",
      activity,
      waitingFor,
      owned: true,
      idleMs: WARN,
    });
    clock.advance(ABORT * 10);
    expect(classifySession(s.snap(q), clock.now(), T)?.type).toBe("session.long_running");
  });

  it("an owned silent model call stays session.long_running until the abort threshold, then is session.stalled", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running() });
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    s.tracker.started("r1", KEY);
    clock.advance(WARN - 1);
    expect(classifySession(s.snap(q), clock.now(), T)).toBeUndefined();
    clock.advance(1);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.long_running",
      activity: "model",
      runId: "r1",
      owned: true,
    });
    clock.advance(ABORT - WARN - 1);
    expect(classifySession(s.snap(q), clock.now(), T)?.type).toBe("session.long_running");
    clock.advance(1);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.stalled",
      activity: "model",
      idleMs: ABORT,
    });
  });

  it("a streamed chunk is progress: the model call's idle time starts again", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running() });
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    s.tracker.started("r1", KEY);
    clock.advance(ABORT - 1);
    s.ev("r1", "thinking", { delta: "hmm" });
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.long_running",
      idleMs: WARN,
    });
  });

  it("an owned tool call is session.long_running, naming the tool, and session.stalled past the abort threshold", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running() });
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    s.ev("r1", "tool", { phase: "start", name: "exec", toolCallId: "c1", args: {} });
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.long_running",
      activity: "tool",
      toolName: "exec",
    });
    clock.advance(ABORT - WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({ type: "session.stalled", activity: "tool" });
  });

  it("history compaction is owned model work: session.long_running until it ends", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running() });
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    s.ev("r1", "compaction", { phase: "start", reason: "threshold", tokensBefore: 9000 });
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.long_running",
      activity: "model",
    });
    s.ev("r1", "compaction", {
      phase: "end",
      reason: "threshold",
      completed: true,
      willRetry: false,
      tokensBefore: 9000,
      tokensAfter: 2000,
      outcome: "compacted",
    });
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({ type: "session.stalled", activity: "run" });
  });

  it("an active run between calls without progress past the warn threshold is session.stalled", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running() });
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    s.tracker.started("r1", KEY);
    s.tracker.ended("r1", KEY);
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.stalled",
      activity: "run",
      owned: true,
    });
  });

  it("model activity no live run owns is session.stuck, not hidden as long-running", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    s.ev("ghost", "lifecycle", { phase: "start", startedAt: 0 });
    s.tracker.started("ghost", KEY);
    clock.advance(WARN);
    // the queue holds nothing for the session: the run's terminal event never came
    expect(classifySession(s.snap(undefined), clock.now(), T)).toMatchObject({
      type: "session.stuck",
      runId: "ghost",
      activity: "model",
      owned: false,
    });
    // and beside another run that is active and fine
    const q = s.queue({ active: running("r2") });
    s.ev("r2", "lifecycle", { phase: "start", startedAt: clock.now() });
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({ type: "session.stuck", runId: "ghost" });
  });

  it("a session marked busy whose run already ended is session.stuck", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: { runId: "r1", phase: "ended", merged: [] }, queued: 2 });
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({
      type: "session.stuck",
      runId: "r1",
      activity: "run",
      owned: false,
      queued: 2,
    });
  });

  it("an idle session with queued work and no drain timer (or an overdue one) is session.stuck", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const lost = s.queue({ queued: 1 });
    const armed = s.queue({ queued: 1, dueAt: clock.now() + 5 * WARN });
    clock.advance(WARN);
    expect(classifySession(s.snap(lost), clock.now(), T)).toMatchObject({
      type: "session.stuck",
      activity: "queued",
      queued: 1,
    });
    // a quiet window that has not passed is not stuck
    expect(classifySession(s.snap(armed), clock.now(), T)).toBeUndefined();
    clock.advance(5 * WARN);
    expect(classifySession(s.snap(armed), clock.now(), T)).toMatchObject({ type: "session.stuck", idleMs: WARN });
  });

  it("a steered message's own events count as the active turn's, not as unowned activity", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    const q = s.queue({ active: running("r1", ["r2"]) });
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    s.ev("r2", "assistant", { delta: "x" });
    s.tracker.started("r1", KEY);
    clock.advance(WARN);
    expect(classifySession(s.snap(q), clock.now(), T)).toMatchObject({ type: "session.long_running", runId: "r1" });
  });

  it("a run's terminal event ends its tracking", () => {
    const clock = new ManualClock(0);
    const s = session(clock);
    s.ev("r1", "lifecycle", { phase: "start", startedAt: 0 });
    s.ev("r1", "lifecycle", { phase: "end", startedAt: 0, endedAt: 1, status: "ok", stopReason: "stop", usage: {} });
    expect(s.tracker.size).toBe(0);
    clock.advance(ABORT);
    expect(classifySession(s.snap(undefined), clock.now(), T)).toBeUndefined();
  });
});
