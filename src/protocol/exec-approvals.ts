/**
 * Exec approvals on the wire: the `exec.approval.requested` / `exec.approval.resolved` event payloads and the
 * `exec.approval.list` reply. Field names follow OpenClaw's ExecApprovalRequestParams (command, cwd, agentId,
 * sessionKey, runId, toolCallId, security, ask) and its approval outcome names (decision, status, reason).
 */

export const EXEC_APPROVAL_DECISIONS = ["allow-once", "allow-always", "deny"] as const;
export type ExecApprovalDecision = (typeof EXEC_APPROVAL_DECISIONS)[number];

/** A command waiting for an operator: the payload of `exec.approval.requested`, an entry of `exec.approval.list`. */
export interface ExecApprovalRequested {
  id: string;
  command: string;
  cwd: string;
  agentId: string;
  sessionKey: string;
  runId: string;
  toolCallId?: string;
  security: string;
  ask: string;
  /** why it was not allowed outright, e.g. `"rm -rf build" matches no tools.exec.allowlist pattern` */
  reason: string;
  createdAtMs: number;
  /** no answer by then: the command is denied */
  expiresAtMs: number;
  /**
   * Loopgate's addition (absent: "exec"): "tool" is a call of a tool that waits for approval (an MCP server's
   * `approval`); `command` then reads `<tool> <arguments as JSON>` for clients that know only exec approvals
   */
  kind?: "exec" | "tool";
  /** the tool's name (kind "tool") */
  tool?: string;
  /** the call's arguments, credential-like values redacted (kind "tool") */
  args?: Record<string, unknown>;
  /**
   * Loopgate's addition: whether the run's exec is sandboxed and why its policy is what it is, e.g.
   * `not sandboxed (agents.defaults.sandbox.mode is "off"): tools.exec.security "allowlist" (the default)`
   */
  sandbox?: ExecSandboxNote;
}

/** Whether a run's exec is sandboxed, and the policy's reason in one line (approvals, `waiting`, `sandbox explain`). */
export interface ExecSandboxNote {
  sandboxed: boolean;
  reason: string;
}

/** How an approval ended: the payload of `exec.approval.resolved`. */
export interface ExecApprovalResolved {
  id: string;
  sessionKey: string;
  runId: string;
  command: string;
  status: "allowed" | "denied" | "expired" | "cancelled";
  /** the operator's answer (allowed / denied) */
  decision?: ExecApprovalDecision;
  /** "user": an operator answered; "timeout": nobody did; "run-aborted": the run stopped waiting */
  reason: "user" | "timeout" | "run-aborted";
  resolvedAtMs: number;
}

export interface ExecApprovalListResult {
  approvals: ExecApprovalRequested[];
}
