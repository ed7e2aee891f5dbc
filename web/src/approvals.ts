/**
 * Approvals the console can answer, by kind. Each kind is data: the events that announce and settle one, the method
 * that lists the pending ones (when the gateway has it), the method that answers one (`{id, decision}`), the answers
 * offered, and how an entry reads. A new kind of approval (budget pauses, issue 30) is one more entry here; the
 * Approvals page and the inline cards in a session render every kind the same way.
 */
import type { BudgetApprovalRequested } from "../../src/protocol/budget-approvals";
import type { ExecApprovalRequested } from "../../src/protocol/exec-approvals";

export interface ApprovalAnswer {
  decision: string;
  label: string;
  danger?: boolean;
}

export interface ApprovalKind {
  /** the key the console files pending approvals under */
  kind: string;
  requestedEvent: string;
  resolvedEvent: string;
  /** `{approvals: [...]}` of the ones pending now; absent: only events feed the list */
  listMethod?: string;
  resolveMethod: string;
  answers: ApprovalAnswer[];
  /** the card's heading (what is asked), a line of context, and why it was asked */
  describe(raw: Record<string, unknown>): { title: string; subject: string; reason?: string };
}

/** A pending approval of any kind, as the console shows it. */
export interface PendingApproval {
  kind: string;
  id: string;
  sessionKey: string;
  runId?: string;
  toolCallId?: string;
  title: string;
  subject: string;
  reason?: string;
  createdAtMs?: number;
  /** no answer by then: the gateway settles it (exec: denied) */
  expiresAtMs?: number;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

export const APPROVAL_KINDS: ApprovalKind[] = [
  {
    kind: "exec",
    requestedEvent: "exec.approval.requested",
    resolvedEvent: "exec.approval.resolved",
    listMethod: "exec.approval.list",
    resolveMethod: "exec.approval.resolve",
    answers: [
      { decision: "allow-once", label: "Allow once" },
      { decision: "allow-always", label: "Allow always" },
      { decision: "deny", label: "Deny", danger: true },
    ],
    describe(raw) {
      const a = raw as unknown as ExecApprovalRequested;
      // MCP tool calls that wait for approval come as exec approvals of kind "tool"
      if (a.kind === "tool") {
        return { title: `${a.tool ?? "tool"} ${JSON.stringify(a.args ?? {})}`, subject: "tool call", reason: a.reason };
      }
      return { title: a.command, subject: `command in ${a.cwd}`, reason: a.reason };
    },
  },
  {
    // a run paused by a budget (SPEC 25, `action: pause`) waits for an operator to let it go on or stop it
    kind: "budget",
    requestedEvent: "budget.approval.requested",
    resolvedEvent: "budget.approval.resolved",
    listMethod: "budget.approval.list",
    resolveMethod: "budget.approval.resolve",
    answers: [
      { decision: "allow-once", label: "Allow one more call" },
      { decision: "raise", label: "Raise for this run" },
      { decision: "deny", label: "Stop the run", danger: true },
    ],
    describe(raw) {
      const a = raw as unknown as Partial<BudgetApprovalRequested>;
      const budget = str(a.budget) ?? "budget";
      const amount = (n: number | undefined) =>
        n === undefined
          ? "?"
          : a.unit === "tokens"
            ? `${Math.round(n).toLocaleString("en")} tokens`
            : `$${n.toFixed(4)}`;
      return {
        title: `${budget} (${str(a.window) ?? "window"}): spent ${amount(num(a.spent))} of ${amount(num(a.limit))}`,
        subject: `budget pause of agent ${str(a.agentId) ?? "?"}`,
        reason: "the run waits before its next model call",
      };
    },
  },
];

/** The console's entry for a requested event's payload (or a list entry) of `kind`. */
export function pendingOf(kind: ApprovalKind, raw: Record<string, unknown>): PendingApproval | undefined {
  const id = str(raw.id);
  const sessionKey = str(raw.sessionKey);
  if (!id || !sessionKey) return undefined;
  return {
    kind: kind.kind,
    id,
    sessionKey,
    runId: str(raw.runId),
    toolCallId: str(raw.toolCallId),
    ...kind.describe(raw),
    createdAtMs: num(raw.createdAtMs),
    expiresAtMs: num(raw.expiresAtMs),
  };
}

export function approvalKind(kind: string): ApprovalKind | undefined {
  return APPROVAL_KINDS.find((k) => k.kind === kind);
}
