import { describe, expect, it } from "vitest";
import type { AgentFinal } from "../agent/service.js";
import type { AgentEvent, AgentStream } from "../infra/events.js";
import { createRunOutput, exitCodeFor, type RunOutputOptions } from "./run-output.js";
import { manualTimer } from "./test-helpers.js";

const ESC = "\x1b[";

/** stdout and stderr as one terminal would show them (in write order), plus each stream on its own. */
function terminal(opts: { outTTY: boolean; errTTY: boolean }) {
  const all: string[] = [];
  const stream = (name: "out" | "err", isTTY: boolean) => {
    const chunks: string[] = [];
    return {
      isTTY,
      columns: 120,
      chunks,
      write: (s: string) => {
        chunks.push(s);
        all.push(`${name}:${s}`);
      },
    };
  };
  return { all, stdout: stream("out", opts.outTTY), stderr: stream("err", opts.errTTY) };
}

function setup(over: Partial<RunOutputOptions> & { outTTY?: boolean; errTTY?: boolean } = {}) {
  const term = terminal({ outTTY: over.outTTY ?? true, errTTY: over.errTTY ?? true });
  const t = manualTimer();
  const out = createRunOutput({ json: false, env: {}, timer: t.timer, ...over, ...term });
  let seq = 0;
  const ev = (stream: AgentStream, data: Record<string, unknown>) =>
    out.render({ runId: "r", seq: ++seq, stream, ts: 0, sessionKey: "agent:main:main", data } as AgentEvent);
  return { ...term, ...t, out, ev };
}

function final(over: Partial<AgentFinal> = {}): AgentFinal {
  return {
    runId: "r",
    status: "ok",
    summary: "completed",
    stopReason: "stop",
    result: {
      payloads: [],
      meta: { durationMs: 1200, usage: { input: 3, output: 4, cacheRead: 0, cacheWrite: 0, total: 7 } },
    },
    ...over,
  } as AgentFinal;
}

describe("the status line in a run's output", () => {
  it("is erased before the reply text reaches the same terminal", () => {
    const { ev, advance, all } = setup({ color: false });
    ev("lifecycle", { phase: "start", model: "fake/fake-model" });
    advance(200);
    ev("assistant", { delta: "Hello", text: "Hello" });
    const reply = all.indexOf("out:Hello");
    expect(all[reply - 2]).toBe("err:\r\x1b[Kwaiting for fake/fake-model · 0.2 s");
    expect(all[reply - 1], "erased right before the reply").toBe("err:\r\x1b[K");
  });

  it("is erased before a tool line, and shows the model again after it", () => {
    const { ev, advance, all } = setup({ env: { NO_COLOR: "1" } });
    ev("tool", { phase: "start", name: "exec", toolCallId: "c", args: { command: "sleep 3" } });
    advance(1400);
    ev("tool", { phase: "result", name: "exec", toolCallId: "c", isError: false, result: "done" });
    advance(100);
    const tool = all.findIndex((s) => s.startsWith("err:⚙ exec sleep 3 → ok"));
    expect(all[tool - 2]).toBe("err:\r\x1b[K⚙ exec `sleep 3` · running 1.4 s");
    expect(all[tool - 1]).toBe("err:\r\x1b[K");
    expect(all.at(-1)).toBe("err:\r\x1b[Kwaiting for the model · 0.1 s");
  });

  it("is gone before the summary and leaves no timer behind", () => {
    const { ev, advance, out, stderr, active } = setup();
    ev("lifecycle", { phase: "start" });
    advance(100);
    out.finish(final());
    expect(stderr.chunks.slice(-2)).toEqual(["\r\x1b[K", "— ok · 7 tokens (in 3 / out 4) · 1.2 s\n"]);
    expect(active()).toBe(0);
  });

  it("never appears when stderr is not a terminal", () => {
    const { ev, advance, stderr, active } = setup({ errTTY: false });
    ev("lifecycle", { phase: "start" });
    advance(1000);
    expect(stderr.chunks).toEqual([]);
    expect(active()).toBe(0);
  });

  it("never appears with --json", () => {
    const { ev, advance, stderr, stdout } = setup({ json: true });
    ev("lifecycle", { phase: "start" });
    advance(1000);
    expect(stderr.chunks).toEqual([]);
    expect(stdout.chunks.join("")).not.toContain(ESC);
  });
});

describe("colour in a run's output follows the stream it is written to", () => {
  const toolRun = (ev: ReturnType<typeof setup>["ev"]) => {
    ev("tool", { phase: "start", name: "exec", toolCallId: "c", args: { command: "false" } });
    ev("tool", { phase: "result", name: "exec", toolCallId: "c", isError: true, result: "boom\nexit code 1" });
  };

  it("tool lines on a terminal stderr are coloured even when stdout is piped", () => {
    const { ev, stderr } = setup({ outTTY: false, errTTY: true });
    toolRun(ev);
    expect(stderr.chunks.join("")).toContain(`${ESC}31mfailed: boom`);
  });

  it("tool lines on a piped stderr have no escape codes even when stdout is a terminal", () => {
    const { ev, stderr } = setup({ outTTY: true, errTTY: false });
    toolRun(ev);
    expect(stderr.chunks.join("")).toBe("⚙ exec false → failed: boom\n");
  });

  it("--no-color and NO_COLOR turn it off on a terminal", () => {
    for (const over of [{ color: false }, { env: { NO_COLOR: "1" } }]) {
      const { ev, stderr } = setup(over);
      toolRun(ev);
      expect(stderr.chunks.join("")).not.toContain(`${ESC}31m`);
    }
  });
});

describe("how a run's end is reported", () => {
  it("a tool cut short by the user's Ctrl-C says aborted, not failed: (no output)", () => {
    let interrupted = false;
    const { ev, stderr } = setup({ errTTY: false, interrupted: () => interrupted });
    ev("tool", { phase: "start", name: "exec", toolCallId: "c", args: { command: "sleep 30" } });
    interrupted = true;
    ev("tool", { phase: "result", name: "exec", toolCallId: "c", isError: true, result: "(no output)\n\naborted" });
    expect(stderr.chunks.join("")).toBe("⚙ exec sleep 30 → aborted\n");
  });

  it("a tool aborted by the gateway says aborted too (exec's status line)", () => {
    const { ev, stderr } = setup({ errTTY: false });
    ev("tool", { phase: "start", name: "exec", toolCallId: "c", args: { command: "sleep 30" } });
    ev("tool", { phase: "result", name: "exec", toolCallId: "c", isError: true, result: "(no output)\n\naborted" });
    expect(stderr.chunks.join("")).toBe("⚙ exec sleep 30 → aborted\n");
  });

  it("a command that printed nothing and failed shows its exit status", () => {
    const { ev, stderr } = setup({ errTTY: false });
    ev("tool", { phase: "start", name: "exec", toolCallId: "c", args: { command: "false" } });
    ev("tool", { phase: "result", name: "exec", toolCallId: "c", isError: true, result: "(no output)\n\nexit code 1" });
    expect(stderr.chunks.join("")).toBe("⚙ exec false → failed: exit code 1\n");
  });

  it("a model error is printed once, on stderr, and stdout keeps only the reply", () => {
    const { out, stdout, stderr } = setup({ errTTY: false, outTTY: false });
    out.finish(
      final({
        status: "error",
        summary: "failed",
        error: "model exploded",
        result: { ...final().result, payloads: [{ text: "⚠️ model exploded", kind: "error" }] },
      }),
    );
    expect(stdout.chunks).toEqual([]);
    expect(stderr.chunks.join("").match(/model exploded/g)).toHaveLength(1);
  });

  it("a failed tool is reported by its tool line only, not again by the reply's fallback text", () => {
    const { ev, out, stdout, stderr } = setup({ errTTY: false, outTTY: false });
    ev("tool", { phase: "start", name: "exec", toolCallId: "c", args: { command: "false" } });
    ev("tool", { phase: "result", name: "exec", toolCallId: "c", isError: true, result: "boom\nexit code 1" });
    out.finish(final({ result: { ...final().result, payloads: [{ text: "⚠️ exec failed: boom", kind: "error" }] } }));
    expect(stdout.chunks).toEqual([]);
    expect(stderr.chunks.join("").match(/boom/g)).toHaveLength(1);
  });

  it("a run aborted from elsewhere is named so in the summary; the user's own Ctrl-C is just aborted", () => {
    const aborted = final({ status: "error", summary: "aborted", error: "gateway shutting down" });
    const byGateway = setup({ errTTY: false, abortedBy: "aborted by the gateway" });
    byGateway.out.finish(aborted);
    expect(byGateway.stderr.chunks.join("")).toMatch(/^— aborted by the gateway · .* · gateway shutting down\n$/);
    const byUser = setup({ errTTY: false, abortedBy: "aborted by the gateway", interrupted: () => true });
    byUser.out.finish(aborted);
    expect(byUser.stderr.chunks.join("")).toMatch(/^— aborted · /);
  });

  it("exit codes: only the user's Ctrl-C is 130; an abort from elsewhere is 1", () => {
    const aborted = final({ status: "error", summary: "aborted" });
    expect(exitCodeFor(aborted, true)).toBe(130);
    expect(exitCodeFor(aborted, false)).toBe(1);
    expect(exitCodeFor(final(), false)).toBe(0);
    expect(exitCodeFor(final({ status: "timeout", summary: "failed" }), false)).toBe(124);
  });
});
