import { describe, expect, it } from "vitest";
import type { AgentEvent, AgentStream } from "../infra/events.js";
import { formatElapsed, trackRunStatus } from "./run-status.js";
import type { StatusText } from "./status-line.js";

/** Records what the status line would show, rendered at a fixed elapsed time. */
function recorder(elapsedMs = 2100, opts: { promptsForApproval?: boolean } = {}) {
  const shown: Array<string | null> = [];
  const sink = {
    show: (text: StatusText) => shown.push(text(elapsedMs)),
    hide: () => shown.push(null),
  };
  const track = trackRunStatus(sink, opts);
  // test events carry only the fields the tracker reads, hence the cast
  const ev = (stream: AgentStream, data: Record<string, unknown>, ts?: number) =>
    track({ stream, data, ts } as AgentEvent);
  return { shown, ev };
}

describe("what the CLI says it is waiting for", () => {
  it("the model's first token, named provider/model, from lifecycle start until text streams", () => {
    const { shown, ev } = recorder();
    ev("lifecycle", { phase: "start", model: "fake/fake-model" });
    ev("assistant", { delta: "Hel", text: "Hel" });
    expect(shown).toEqual(["waiting for fake/fake-model · 2.1 s", null]);
  });

  it("a running tool with its command, then the model again once the tool has answered", () => {
    const { shown, ev } = recorder(1400);
    ev("lifecycle", { phase: "start", model: "fake/fake-model" });
    ev("tool", { phase: "start", name: "exec", toolCallId: "c1", args: { command: "sleep 3" } });
    ev("tool", { phase: "update", name: "exec", toolCallId: "c1", partialResult: "x" });
    ev("tool", { phase: "result", name: "exec", toolCallId: "c1", isError: false, result: "" });
    expect(shown).toEqual([
      "waiting for fake/fake-model · 1.4 s",
      "⚙ exec `sleep 3` · running 1.4 s",
      "waiting for fake/fake-model · 1.4 s",
    ]);
  });

  it("parallel tools: when one finishes, the one still running is shown", () => {
    const { shown, ev } = recorder();
    ev("tool", { phase: "start", name: "read", toolCallId: "a", args: { path: "a.txt" } });
    ev("tool", { phase: "start", name: "exec", toolCallId: "b", args: { command: "make" } });
    ev("tool", { phase: "result", name: "exec", toolCallId: "b", isError: false, result: "" });
    expect(shown.at(-1)).toBe("⚙ read `a.txt` · running 2.1 s");
  });

  it("the session write lock, naming the holder's pid, and the model once the lock is taken", () => {
    const { shown, ev } = recorder(3000);
    ev("lifecycle", { phase: "start", model: "fake/fake-model" });
    ev("lifecycle", { phase: "waiting", for: "session_lock", holderPid: 4242, lockPath: "/x/lock" });
    ev("lifecycle", { phase: "waiting", for: "model", model: "fake/fake-model" });
    expect(shown.slice(1)).toEqual([
      "waiting for session lock held by pid 4242 · 3.0 s",
      "waiting for fake/fake-model · 3.0 s",
    ]);
  });

  it("an exec approval: the command an operator must approve with the time left, then the tool once allowed", () => {
    const { shown, ev } = recorder(5000);
    ev("tool", { phase: "start", name: "exec", toolCallId: "c1", args: { command: "rm -rf build" } });
    const waiting = {
      phase: "waiting",
      for: "approval",
      approvalId: "a1",
      command: "rm -rf build",
      expiresAtMs: 125_000,
    };
    ev("lifecycle", waiting, 5000);
    ev("lifecycle", { phase: "resumed", for: "approval", approvalId: "a1", status: "allowed", decision: "allow-once" });
    ev("tool", { phase: "result", name: "exec", toolCallId: "c1", isError: false, result: "ok" });
    expect(shown).toEqual([
      "⚙ exec `rm -rf build` · running 5.0 s",
      "waiting for approval of `rm -rf build` · 1 m 55 s left",
      "⚙ exec `rm -rf build` · running 5.0 s",
      "waiting for the model · 5.0 s",
    ]);
  });

  it("an exec approval asked on this terminal: the status line makes way for the prompt", () => {
    const { shown, ev } = recorder(5000, { promptsForApproval: true });
    ev("lifecycle", { phase: "waiting", for: "approval", approvalId: "a1", command: "rm -rf build", expiresAtMs: 1 });
    expect(shown).toEqual([null]);
  });

  it("approval-question-not-overdrawn: nothing is drawn over the terminal's question until the approval ends", () => {
    const { shown, ev } = recorder(5000, { promptsForApproval: true });
    ev("lifecycle", { phase: "waiting", for: "approval", approvalId: "a1", command: "rm -rf build", expiresAtMs: 1 });
    // a start that arrives after the question (the order before the fix) must not bring the ticker back
    ev("tool", { phase: "start", name: "exec", toolCallId: "c1", args: { command: "rm -rf build" } });
    ev("assistant", { delta: "x" });
    expect(shown).toEqual([null]);
    ev("lifecycle", { phase: "resumed", for: "approval", approvalId: "a1", status: "denied", decision: "deny" });
    expect(shown).toEqual([null, "⚙ exec `rm -rf build` · running 5.0 s"]);
  });

  it("a lane: from the queue receipt until the run starts", () => {
    const { shown, ev } = recorder();
    ev("queue", { receipt: { kind: "queued", position: 2, mode: "followup" } });
    ev("queue", { receipt: { kind: "started" } });
    ev("lifecycle", { phase: "start" });
    expect(shown).toEqual([
      "waiting for a lane (queued, position 2) · 2.1 s",
      "waiting for a lane · 2.1 s",
      "waiting for the model · 2.1 s",
    ]);
  });

  it("nothing is shown once the run has ended, whichever way", () => {
    for (const phase of ["end", "error"]) {
      const { shown, ev } = recorder();
      ev("lifecycle", { phase: "start" });
      ev("lifecycle", { phase });
      expect(shown.at(-1)).toBeNull();
    }
  });
});

describe("formatElapsed", () => {
  it("shows tenths below a minute and minutes with seconds above", () => {
    expect(formatElapsed(0)).toBe("0.0 s");
    expect(formatElapsed(2149)).toBe("2.1 s");
    expect(formatElapsed(65_000)).toBe("1 m 05 s");
  });
});
