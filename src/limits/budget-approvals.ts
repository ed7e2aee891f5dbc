/**
 * Budget approvals: a run whose `pause` budget is used up waits here before its next model call until an operator
 * answers (`budget.approval.resolve`: allow-once, raise, deny), its timeout (denied), or its abort. Shaped like the
 * exec approvals (agent/exec-approvals.ts): listeners hear each request and answer, the gateway broadcasts them.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../infra/clock.js";
import type {
  BudgetApprovalDecision,
  BudgetApprovalRequested,
  BudgetApprovalResolved,
} from "../protocol/budget-approvals.js";

export type BudgetApprovalEvent =
  | { type: "requested"; request: BudgetApprovalRequested }
  | { type: "resolved"; resolved: BudgetApprovalResolved; by?: string };

/** `budget.approval.resolve` with an id that is not waiting. */
export class BudgetApprovalError extends Error {
  readonly code = "not_found";
  constructor(message: string) {
    super(message);
    this.name = "BudgetApprovalError";
  }
}

interface Pending {
  request: BudgetApprovalRequested;
  settle(status: BudgetApprovalResolved["status"], decision?: BudgetApprovalDecision, by?: string): void;
}

const ENDED_KEPT = 1000;

export class BudgetApprovals {
  private readonly pendingById = new Map<string, Pending>();
  private readonly ended = new Map<string, BudgetApprovalResolved>();
  private readonly listeners = new Set<(ev: BudgetApprovalEvent) => void>();

  constructor(
    private readonly opts: {
      clock: Clock;
      timeoutMs: number;
      newId?: () => string;
      onListenerError?: (e: Error) => void;
    },
  ) {}

  /**
   * Waits for an answer. Resolves with the resolution (status allowed with its decision, or denied, expired,
   * cancelled); `onWaiting` runs once the request is announced.
   */
  ask(
    req: Omit<BudgetApprovalRequested, "id" | "createdAtMs" | "expiresAtMs">,
    signal: AbortSignal,
    onWaiting: (request: BudgetApprovalRequested) => void,
  ): Promise<BudgetApprovalResolved> {
    const now = this.opts.clock.now();
    const request: BudgetApprovalRequested = {
      ...req,
      id: `budget-${(this.opts.newId ?? randomUUID)()}`,
      createdAtMs: now,
      expiresAtMs: now + this.opts.timeoutMs,
    };
    return new Promise((resolve) => {
      const settle: Pending["settle"] = (status, decision, by) => {
        if (!this.pendingById.delete(request.id)) return;
        this.opts.clock.clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        const resolved: BudgetApprovalResolved = {
          id: request.id,
          runId: request.runId,
          sessionKey: request.sessionKey,
          budget: request.budget,
          status,
          ...(decision ? { decision } : {}),
          resolvedAtMs: this.opts.clock.now(),
        };
        this.ended.set(request.id, resolved);
        if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
        this.emit({ type: "resolved", resolved, ...(by ? { by } : {}) });
        resolve(resolved);
      };
      const timer = this.opts.clock.setTimeout(() => settle("expired"), this.opts.timeoutMs);
      const onAbort = () => settle("cancelled");
      if (signal.aborted) {
        this.pendingById.set(request.id, { request, settle });
        return settle("cancelled");
      }
      signal.addEventListener("abort", onAbort, { once: true });
      this.pendingById.set(request.id, { request, settle });
      onWaiting(request);
      this.emit({ type: "requested", request });
    });
  }

  /** An operator's answer; throws BudgetApprovalError for an id that is not waiting. */
  resolve(id: string, decision: BudgetApprovalDecision, by?: string): BudgetApprovalResolved {
    const pending = this.pendingById.get(id);
    if (!pending) {
      const ended = this.ended.get(id);
      throw new BudgetApprovalError(
        ended
          ? `budget approval "${id}" was already ${ended.status}`
          : `no pending budget approval "${id}" (see budget.approval.list)`,
      );
    }
    pending.settle(decision === "deny" ? "denied" : "allowed", decision, by);
    return this.ended.get(id)!;
  }

  pending(): BudgetApprovalRequested[] {
    return [...this.pendingById.values()].map((p) => p.request);
  }

  get(id: string): BudgetApprovalRequested | undefined {
    return this.pendingById.get(id)?.request;
  }

  subscribe(listener: (ev: BudgetApprovalEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(ev: BudgetApprovalEvent): void {
    for (const l of this.listeners) {
      try {
        l(ev);
      } catch (err) {
        this.opts.onListenerError?.(err as Error);
      }
    }
  }
}
