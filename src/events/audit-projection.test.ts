import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../protocol/agent-events.js";
import { auditRowOf, toolCallFingerprint } from "./audit-projection.js";

const SECRET = "sk-live-SECRET-4242";
const at = { runId: "run-1", sessionKey: "agent:main:main", ts: 1_700_000_000_000 };
let seq = 0;
const ev = (stream: AgentEvent["stream"], data: unknown): AgentEvent =>
  ({ ...at, seq: ++seq, stream, data }) as AgentEvent;

describe("audit rows from run events", () => {
  it("records a run's start and end, and a tool call's start and end, with codes and no content", () => {
    const rows = [
      ev("lifecycle", { phase: "start", startedAt: 1, model: "s/m" }),
      ev("assistant", { delta: SECRET, text: SECRET }),
      ev("tool", { phase: "start", name: "read", toolCallId: "call_1", args: { path: `/home/${SECRET}` } }),
      ev("tool", { phase: "update", name: "read", toolCallId: "call_1", partialResult: SECRET }),
      ev("tool", { phase: "result", name: "read", toolCallId: "call_1", isError: false, result: SECRET }),
      ev("tool", { phase: "result", name: "exec", toolCallId: "call_2", isError: true, result: SECRET }),
      ev("lifecycle", { phase: "retry", attempt: 1, delayMs: 5, reason: SECRET, model: "s/m" }),
      ev("lifecycle", {
        phase: "end",
        startedAt: 1,
        endedAt: 2,
        status: "ok",
        stopReason: "stop",
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
      }),
    ].map(auditRowOf);
    expect(rows.filter(Boolean).map((r) => [r?.action, r?.status, r?.code, r?.toolName])).toEqual([
      ["agent.run.started", "started", undefined, undefined],
      ["tool.action.started", "started", undefined, "read"],
      ["tool.action.finished", "succeeded", "ok", "read"],
      ["tool.action.finished", "failed", "error", "exec"],
      ["agent.run.finished", "succeeded", "stop", undefined],
    ]);
    expect(rows[2]).toMatchObject({
      runId: "run-1",
      sessionKey: "agent:main:main",
      occurredAt: at.ts,
      sourceSequence: 3,
      toolCallFingerprint: toolCallFingerprint("call_1"),
      schemaVersion: 1,
      redaction: "metadata_only",
    });
    expect(toolCallFingerprint("call_1")).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(rows)).not.toContain(SECRET);
    expect(JSON.stringify(rows)).not.toContain("call_1");
  });

  it("a tool call's fingerprint is the one rows already in a ledger carry, whatever call came before it", () => {
    // rows written by earlier versions are matched to new ones by this value: the first 16 hex digits of sha256
    const stored = (id: string) => createHash("sha256").update(id).digest("hex").slice(0, 16);
    for (const id of ["call_1", "call_1", "call_2", "call_1", "é-call", "", "call_2"])
      expect(toolCallFingerprint(id)).toBe(stored(id));
    const start = auditRowOf(ev("tool", { phase: "start", name: "read", toolCallId: "call_9", args: {} }));
    const other = auditRowOf(ev("tool", { phase: "start", name: "read", toolCallId: "call_8", args: {} }));
    const end = auditRowOf(ev("tool", { phase: "result", name: "read", toolCallId: "call_9", isError: false }));
    expect(end?.toolCallFingerprint).toBe(start?.toolCallFingerprint);
    expect(other?.toolCallFingerprint).not.toBe(start?.toolCallFingerprint);
  });

  it("a failed run keeps its status and error kind, never the error's text", () => {
    const failed = auditRowOf(
      ev("lifecycle", {
        phase: "error",
        endedAt: 2,
        status: "error",
        stopReason: "error",
        error: SECRET,
        kind: "rate_limit",
      }),
    );
    expect(failed).toMatchObject({ action: "agent.run.finished", status: "failed", code: "rate_limit" });
    const timedOut = auditRowOf(
      ev("lifecycle", { phase: "error", endedAt: 2, status: "timeout", stopReason: "timeout", error: SECRET }),
    );
    expect(timedOut).toMatchObject({ status: "timed_out", code: "timeout" });
    const aborted = auditRowOf(
      ev("lifecycle", { phase: "error", endedAt: 2, status: "aborted", stopReason: "aborted", error: SECRET }),
    );
    expect(aborted).toMatchObject({ status: "cancelled", code: "aborted" });
    expect(JSON.stringify([failed, timedOut, aborted])).not.toContain(SECRET);
  });

  it("a stop reason or tool name that is not an identifier is stored as 'other', so text cannot slip in as a code", () => {
    const end = auditRowOf(
      ev("lifecycle", {
        phase: "end",
        startedAt: 1,
        endedAt: 2,
        status: "ok",
        stopReason: `the key is ${SECRET}`,
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
      }),
    );
    const tool = auditRowOf(ev("tool", { phase: "start", name: `read ${SECRET} please`, toolCallId: "c", args: {} }));
    expect(end?.code).toBe("other");
    expect(tool?.toolName).toBe("other");
  });

  it("a skipped tool call says why: blocked by a hook, or cancelled by a steer or an abort", () => {
    const skipped = (skipped: string) =>
      auditRowOf(ev("tool", { phase: "result", name: "exec", toolCallId: "c", isError: true, result: "", skipped }));
    expect(skipped("blocked")).toMatchObject({ status: "blocked", code: "blocked" });
    expect(skipped("steer")).toMatchObject({ status: "cancelled", code: "steer" });
    expect(skipped("aborted")).toMatchObject({ status: "cancelled", code: "aborted" });
  });
});
