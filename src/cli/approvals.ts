import { GatewayRequestError } from "../client/errors.js";
import type {
  BudgetApprovalDecision,
  BudgetApprovalRequested,
  BudgetApprovalResolved,
} from "../protocol/budget-approvals.js";
import type {
  ExecApprovalDecision,
  ExecApprovalListResult,
  ExecApprovalRequested,
  ExecApprovalResolved,
} from "../protocol/exec-approvals.js";
import { connectGateway, consoleApprovalUrl, resolveGatewayTarget } from "./agent-remote.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface ApprovalsCliOptions {
  url?: string;
  token?: string;
  config?: string;
  json?: boolean;
}

/** What the gateway asks of a client that lists or answers approvals (SPEC 21: admin implies it). */
const SCOPE = "operator.approvals";

/**
 * One call with the approvals scope. A refusal is said in the user's terms: which scope the token lacks, an id
 * that is not waiting (unknown, already answered, expired: the gateway's message says which).
 */
async function withApprovals<T>(
  opts: ApprovalsCliOptions,
  fn: (url: string, call: <R>(m: string, p: unknown) => Promise<R>) => Promise<T>,
): Promise<T> {
  const { url, token } = resolveGatewayTarget(opts);
  // admin answers approvals too, but a token's scopes are matched by name at connect: ask for both
  const client = await connectGateway(url, token, [SCOPE, "operator.admin"]);
  try {
    return await fn(url, (method, params) => client.request(method, params));
  } catch (err) {
    if (!(err instanceof GatewayRequestError)) throw err;
    if (err.code === "unauthorized" || err.code === "forbidden") {
      throw new CliError(
        `${err.message}; listing and answering approvals needs a token with scope ${SCOPE} (or operator.admin)`,
        EXIT.usage,
      );
    }
    // the gateway's message already names the param ("params.id: …") and what is wrong with it
    const usage = ["invalid_params", "not_found", "conflict"].includes(err.code);
    throw new CliError(`${err.method}: ${err.message}`, usage ? EXIT.usage : EXIT.runError);
  } finally {
    await client.close();
  }
}

/** "1 m 05 s" / "42 s" left, "expired" once past. */
function left(ms: number): string {
  if (ms <= 0) return "expiring";
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s left` : `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, "0")} s left`;
}

/** One block per waiting approval: id, what waits, why, where, and how long it may still wait. */
export function formatApprovals(approvals: ExecApprovalRequested[], gatewayUrl: string, now: number): string {
  if (approvals.length === 0) return "no approvals waiting";
  return approvals
    .map((a) => {
      const what = a.kind === "tool" ? `tool ${a.tool} ${JSON.stringify(a.args ?? {})}` : `exec ${a.command}`;
      return [
        `${a.id}  ${what}`,
        `  why: ${a.reason}`,
        `  session ${a.sessionKey} · agent ${a.agentId} · cwd ${a.cwd} · ${left(a.expiresAtMs - now)} (until ${new Date(a.expiresAtMs).toISOString()})`,
        `  console: ${consoleApprovalUrl(gatewayUrl, a.id)}`,
      ].join("\n");
    })
    .join("\n");
}

/** One block per run paused by a used-up budget (SPEC 25): the budget, its spend and limit, how to answer. */
export function formatBudgetApprovals(approvals: BudgetApprovalRequested[], now: number): string {
  const amount = (unit: string, n: number) => (unit === "usd" ? `$${n.toFixed(4)}` : `${n} tokens`);
  return approvals
    .map((a) =>
      [
        `${a.id}  budget ${a.budget} (${a.window}): spent ${amount(a.unit, a.spent)} of ${amount(a.unit, a.limit)}`,
        `  run ${a.runId} · session ${a.sessionKey} · agent ${a.agentId} · ${left(a.expiresAtMs - now)} (until ${new Date(a.expiresAtMs).toISOString()})`,
        `  answer: loopgate approvals allow|raise|deny ${a.id}`,
      ].join("\n"),
    )
    .join("\n");
}

/** `loopgate approvals list [--json]`: the approvals waiting in the sessions this token may approve. */
export async function runApprovalsList(opts: ApprovalsCliOptions): Promise<number> {
  const text = await withApprovals(opts, async (url, call) => {
    const result = await call<ExecApprovalListResult>("exec.approval.list", {});
    const budgets = await call<{ approvals: BudgetApprovalRequested[] }>("budget.approval.list", {});
    if (opts.json) return JSON.stringify({ ...result, budgets: budgets.approvals });
    if (budgets.approvals.length === 0) return formatApprovals(result.approvals, url, Date.now());
    const exec = result.approvals.length > 0 ? `${formatApprovals(result.approvals, url, Date.now())}\n` : "";
    return `${exec}${formatBudgetApprovals(budgets.approvals, Date.now())}`;
  });
  process.stdout.write(`${text}\n`);
  return EXIT.ok;
}

const DONE: Record<ExecApprovalDecision, string> = {
  "allow-once": "allowed once",
  "allow-always": "allowed, and remembered for this agent and command",
  deny: "denied",
};

const BUDGET_DONE: Record<BudgetApprovalDecision, string> = {
  "allow-once": "allowed one more model call",
  raise: "raised: the budget no longer pauses this run",
  deny: "denied: the run ends with budget_exceeded",
};

/** A budget approval's id (budget-<uuid>): it is answered with budget.approval.resolve. */
function isBudgetApproval(id: string): boolean {
  return id.startsWith("budget-");
}

/** `loopgate approvals allow|deny|allow-always|raise <id>`: answers one waiting approval. */
export async function runApprovalsResolve(
  id: string,
  decision: ExecApprovalDecision | "raise",
  opts: ApprovalsCliOptions,
): Promise<number> {
  if (isBudgetApproval(id) || decision === "raise") {
    if (decision === "allow-always") {
      throw new CliError(`approval ${id} is a budget approval: answer it with allow, raise or deny`, EXIT.usage);
    }
    const resolved = await withApprovals(opts, (_url, call) =>
      call<BudgetApprovalResolved>("budget.approval.resolve", { id, decision }),
    );
    process.stdout.write(
      opts.json
        ? `${JSON.stringify(resolved)}\n`
        : `approval ${id} (budget ${resolved.budget}): ${BUDGET_DONE[decision]}\n`,
    );
    return EXIT.ok;
  }
  const resolved = await withApprovals(opts, (_url, call) =>
    call<ExecApprovalResolved>("exec.approval.resolve", { id, decision }),
  );
  process.stdout.write(
    opts.json ? `${JSON.stringify(resolved)}\n` : `approval ${id} (${resolved.command}): ${DONE[decision]}\n`,
  );
  return EXIT.ok;
}
