/**
 * Budget approvals on the wire (SPEC 25): the `budget.approval.requested` / `budget.approval.resolved` event
 * payloads and the `budget.approval.resolve` params. A run whose `pause` budget is used up waits for one.
 */
import { z } from "zod";

export const BUDGET_APPROVAL_DECISIONS = ["allow-once", "raise", "deny"] as const;
export type BudgetApprovalDecision = (typeof BUDGET_APPROVAL_DECISIONS)[number];

/** A run waiting before its next model call: what budget, how much was spent of how much. */
export interface BudgetApprovalRequested {
  id: string;
  runId: string;
  sessionKey: string;
  agentId: string;
  /** the budget's id (limits.budgets[].id, else its config path) */
  budget: string;
  window: string;
  unit: "usd" | "tokens";
  spent: number;
  limit: number;
  createdAtMs: number;
  expiresAtMs: number;
}

export interface BudgetApprovalResolved {
  id: string;
  runId: string;
  sessionKey: string;
  budget: string;
  status: "allowed" | "denied" | "expired" | "cancelled";
  decision?: BudgetApprovalDecision;
  resolvedAtMs: number;
}

export const budgetApprovalListParams = z.strictObject({});

export const budgetApprovalResolveParams = z.strictObject({
  id: z.string().min(1),
  decision: z.enum(BUDGET_APPROVAL_DECISIONS),
});
export type BudgetApprovalResolveParams = z.infer<typeof budgetApprovalResolveParams>;
