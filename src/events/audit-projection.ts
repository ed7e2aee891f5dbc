/**
 * Run events → audit rows (SPEC 11), as a pure function. Only lifecycle start/terminal and tool start/terminal
 * events make a row, and a row is built field by field from codes, names and ids: nothing of the event's content
 * (prompt, reply, tool args or result, error text, paths) is ever copied, so no later change to an event's data can
 * leak into the ledger by accident.
 */
import { hash } from "node:crypto";
import type { AgentEvent } from "../protocol/agent-events.js";
import { AUDIT_SCHEMA_VERSION, type AuditStatus } from "../protocol/payloads.js";
import type { AuditEventInput } from "../storage/types.js";

/** A row as the projection makes it; the ledger adds who started the run and the row's id. */
export type AuditRowDraft = Omit<AuditEventInput, "actor" | "eventId">;

/**
 * Codes and tool names come from providers, plugins and the model (a tool name is whatever the model called): a
 * value that does not look like an identifier could be text, so it is replaced rather than stored.
 */
const CODE = /^[A-Za-z0-9_.:-]{1,64}$/;
export function auditCode(value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  return CODE.test(value) ? value : "other";
}

/** the last id fingerprinted: a tool call's start and its result come one after the other and share it */
let lastToolCallId: string | undefined;
let lastFingerprint = "";

/**
 * The first 16 hex digits of the sha256 of a tool call id: enough to match start and end, nothing to read. The
 * one-shot `hash` costs a third of a `createHash` object (measured ~0.4 against ~1.4 µs a call), and the second
 * row of a call reuses the first one's value; the digits are the same as before, so stored rows still match.
 */
export function toolCallFingerprint(toolCallId: string): string {
  if (toolCallId !== lastToolCallId) {
    lastFingerprint = hash("sha256", toolCallId, "hex").slice(0, 16);
    lastToolCallId = toolCallId;
  }
  return lastFingerprint;
}

const runEndStatus: Record<"error" | "timeout" | "aborted", AuditStatus> = {
  error: "failed",
  timeout: "timed_out",
  aborted: "cancelled",
};

const toolSkipStatus: Record<"steer" | "blocked" | "aborted", AuditStatus> = {
  steer: "cancelled",
  blocked: "blocked",
  aborted: "cancelled",
};

/** The audit row an event makes, or undefined for the events the ledger does not record. */
export function auditRowOf(event: AgentEvent): AuditRowDraft | undefined {
  const base = {
    occurredAt: event.ts,
    sessionKey: event.sessionKey,
    runId: event.runId,
    sourceSequence: event.seq,
    schemaVersion: AUDIT_SCHEMA_VERSION,
    redaction: "metadata_only" as const,
  };
  if (event.stream === "lifecycle") {
    const d = event.data;
    if (d.phase === "start") return { ...base, action: "agent.run.started", status: "started" };
    if (d.phase === "waiting" && d.for === "budget") {
      return withCode({ ...base, action: "budget.paused", status: "blocked" }, auditCode(d.budget));
    }
    if (d.phase === "end") {
      return withCode({ ...base, action: "agent.run.finished", status: "succeeded" }, auditCode(d.stopReason));
    }
    if (d.phase === "error") {
      const status = runEndStatus[d.status] ?? "unknown";
      return withCode({ ...base, action: "agent.run.finished", status }, auditCode(d.kind ?? d.stopReason));
    }
    if (d.phase === "auth_rotate") {
      // profile ids are config names ("openai:work"), never keys: which profile was left, and why
      return withCode(
        { ...base, action: "model.auth.rotated", status: "succeeded" },
        auditCode(`${d.reason}:${d.from}`),
      );
    }
    return undefined;
  }
  if (event.stream === "tool") {
    const d = event.data;
    const tool = { toolName: auditCode(d.name) ?? "other", toolCallFingerprint: toolCallFingerprint(d.toolCallId) };
    if (d.phase === "start") return { ...base, ...tool, action: "tool.action.started", status: "started" };
    if (d.phase === "result") {
      const status: AuditStatus = d.skipped ? toolSkipStatus[d.skipped] : d.isError ? "failed" : "succeeded";
      const code = d.skipped ?? (d.isError ? "error" : "ok");
      return { ...base, ...tool, action: "tool.action.finished", status, code };
    }
  }
  return undefined;
}

function withCode(row: AuditRowDraft, code: string | undefined): AuditRowDraft {
  return code === undefined ? row : { ...row, code };
}
