import { randomUUID } from "node:crypto";
import type { ExecToolConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { ExecApprovalDecision, ExecApprovalRequested, ExecApprovalResolved } from "../protocol/exec-approvals.js";
import type { ExecSecurity } from "../tools/exec-policy.js";
import { decideExec, type ExecPolicy } from "../tools/exec-policy.js";
import type { EffectiveExecPolicy } from "../tools/sandbox/exec-policy.js";
import { redactText } from "../tools/sanitize.js";
import type { ExecVerdict } from "../tools/types.js";
import { AllowAlwaysFile, type AllowAlwaysList, type AllowAlwaysView } from "./exec-allow-always.js";

/**
 * Asks on the terminal (the CLI's embedded runs) instead of waiting for an operator. `signal` aborts when the run
 * stops or the approval times out: the prompt must stop reading then. `{ deny }` refuses with that reason (no
 * terminal to ask on).
 */
export type ExecPrompt = (
  request: ExecApprovalRequested,
  signal: AbortSignal,
) => Promise<ExecApprovalDecision | { deny: string }>;

export type ExecApprovalEvent =
  | { type: "requested"; request: ExecApprovalRequested }
  /** `by`: who answered (an operator connection's actor, "terminal" for the prompt); absent when nobody did */
  | { type: "resolved"; resolved: ExecApprovalResolved; by?: string };

export interface ExecApprovalsOptions {
  config: ExecToolConfig;
  /** the security used when tools.exec.security is not set: "full" for the CLI's own runs, "allowlist" otherwise */
  defaultSecurity: ExecSecurity;
  /** allow-always answers are kept in <stateDir>/exec-approvals.json, unless `allowAlways` keeps them elsewhere */
  stateDir: string;
  /** where the answers and patterns are kept when not in the state dir's file: the shared store of a Postgres fleet */
  allowAlways?: AllowAlwaysList;
  clock: Clock;
  logger?: Logger;
  newId?: () => string;
  prompt?: ExecPrompt;
}

/**
 * Who answers, as far as allow-always cares: the session globs of the approver's token grant (an allow-always answer
 * holds only inside them). Undefined: an approver whose grant is every session, or the terminal prompt.
 */
export interface Approver {
  sessions?: readonly string[];
  /** who answered, for the log line (a connection's actor, e.g. "cli" or "device:<id>") */
  by?: string;
}

/** One exec call that wants approval, as the run knows it: the request's identifying fields, and how to wait. */
export interface ExecApprovalContext
  extends Pick<ExecApprovalRequested, "command" | "cwd" | "agentId" | "sessionKey" | "runId" | "toolCallId"> {
  /** the tool's signal: aborting it ends the wait (denied, status "cancelled") */
  signal: AbortSignal;
  /** called once the run starts waiting (the run reports a lifecycle `waiting` event) */
  onWaiting?: (request: ExecApprovalRequested) => void;
  /** called once the wait ends, however it ends (the run reports a lifecycle `resumed` event) */
  onSettled?: (resolved: ExecApprovalResolved) => void;
  /** the run's own policy (a sandboxed run's differs) and why; absent: the process's `policy` */
  effective?: EffectiveExecPolicy;
}

/** One call of a tool that waits for approval (mcp.servers.<name>.approval), as the run knows it. */
export interface ToolApprovalContext extends Omit<ExecApprovalContext, "command"> {
  tool: string;
  /** the call's arguments as approvers are shown them (the caller redacts credential-like values) */
  args: Record<string, unknown>;
}

/** `exec.approval.resolve` with an id that is not pending. */
export class ExecApprovalError extends Error {
  constructor(
    readonly code: "not_found" | "expired",
    message: string,
  ) {
    super(message);
    this.name = "ExecApprovalError";
  }
}

interface Pending {
  request: ExecApprovalRequested;
  settle: (
    status: ExecApprovalResolved["status"],
    reason: ExecApprovalResolved["reason"],
    decision?: ExecApprovalDecision,
    approver?: Approver,
  ) => void;
}

/** The terminal prompt as an approver: every session (it answers for the user's own embedded run). */
const TERMINAL: Approver = { by: "terminal" };

/** How many ended approvals are remembered, so a late answer is told "expired" rather than "unknown". */
const ENDED_KEPT = 1000;

/**
 * The tools.exec policy for one process and the approvals it waits for. A run calls `check` before exec spawns
 * anything; when the policy asks, the request is announced (`subscribe`: the gateway broadcasts it to approvers) or
 * put to the terminal prompt, and the run waits for `resolve`, its timeout (denied), or its abort.
 */
export class ExecApprovals {
  /** tools.exec as it is now: replaced by `reconfigure` when the config is reloaded */
  policy: ExecPolicy;
  timeoutMs: number;
  private readonly pendingById = new Map<string, Pending>();
  private readonly ended = new Map<string, ExecApprovalResolved>();
  private readonly listeners = new Set<(ev: ExecApprovalEvent) => void>();
  private readonly allowAlways: AllowAlwaysList;
  private readonly newId: () => string;

  constructor(private readonly opts: ExecApprovalsOptions) {
    this.policy = {
      security: opts.config.security ?? opts.defaultSecurity,
      ask: opts.config.ask,
      allowlist: opts.config.allowlist,
    };
    this.timeoutMs = opts.config.approvalTimeoutSeconds * 1000;
    this.allowAlways = opts.allowAlways ?? new AllowAlwaysFile(opts.stateDir, opts.logger);
    this.newId = opts.newId ?? randomUUID;
  }

  /** A reloaded tools.exec (SPEC 26): the next check uses it; an approval already waiting keeps its timeout. */
  reconfigure(config: ExecToolConfig): void {
    this.policy = {
      security: config.security ?? this.opts.defaultSecurity,
      ask: config.ask,
      allowlist: config.allowlist,
    };
    this.timeoutMs = config.approvalTimeoutSeconds * 1000;
  }

  /** Whether exec may run the command now; waits for an answer when the policy asks. */
  async check(ctx: ExecApprovalContext): Promise<ExecVerdict> {
    // answers and patterns other nodes stored (a fleet): read again when the last read is older than a second
    // (a file of one process has nothing to read: no await, so the check stays in the caller's turn)
    const fresh = this.allowAlways.refresh();
    if (fresh) await fresh;
    const always = this.allowAlways.has(ctx.agentId, ctx.command, ctx.sessionKey);
    // the run's policy (a sandbox may lift it to "full"), with the operators' saved patterns as they are now
    const decision = decideExec(this.effectivePolicy(ctx.effective?.policy), ctx.command, always);
    if (decision.kind === "allow") return { allowed: true };
    if (decision.kind === "deny") return { allowed: false, reason: decision.reason };
    return this.ask(ctx, decision.reason);
  }

  /**
   * Waits for an operator's answer to one call of a tool that needs approval, like an exec command the policy asks
   * about: the same list, events, timeout and console. allow-always answers this call only (a tool's approval is
   * not remembered yet); `command` reads `<tool> <args JSON>` for clients that know only exec approvals.
   */
  askTool(ctx: ToolApprovalContext): Promise<ExecVerdict> {
    const { tool, args, ...rest } = ctx;
    return this.ask(
      { ...rest, command: `${tool} ${JSON.stringify(args)}` },
      `tool "${tool}" waits for approval (mcp.servers.<name>.approval)`,
      { tool, args },
    );
  }

  /**
   * An operator's answer. Throws ExecApprovalError for an id that is not waiting (unknown, or already ended). An
   * allow-always answer is remembered inside `approver.sessions` only.
   */
  resolve(id: string, decision: ExecApprovalDecision, approver?: Approver): ExecApprovalResolved {
    const pending = this.pendingById.get(id);
    if (!pending) {
      const ended = this.ended.get(id);
      if (ended?.status === "expired") {
        throw new ExecApprovalError(
          "expired",
          `exec approval "${id}" expired at ${new Date(ended.resolvedAtMs).toISOString()}: the command was denied`,
        );
      }
      if (ended) throw new ExecApprovalError("not_found", `exec approval "${id}" was already ${ended.status}`);
      throw new ExecApprovalError("not_found", `no pending exec approval "${id}" (see exec.approval.list)`);
    }
    pending.settle(decision === "deny" ? "denied" : "allowed", "user", decision, approver);
    return this.ended.get(id)!;
  }

  /** The policy a command is checked against: tools.exec.allowlist plus the operators' patterns in the file. */
  effectivePolicy(base: ExecPolicy = this.policy): ExecPolicy {
    const extra = this.allowAlways.allowlist;
    return extra.length ? { ...base, allowlist: [...base.allowlist, ...extra] } : base;
  }

  /** exec-approvals.json as exec.approvals.get shows it */
  file(): { path: string; file: AllowAlwaysView } {
    return { path: this.allowAlways.path, file: this.allowAlways.view() };
  }

  /** exec.approvals.set: the operators' allowlist patterns (validated by the caller like tools.exec.allowlist). */
  async setAllowlist(patterns: readonly string[]): Promise<void> {
    await this.allowAlways.setAllowlist(patterns);
  }

  /** What other nodes stored is read again (exec.approvals.get answers what holds now). */
  async refresh(): Promise<void> {
    await this.allowAlways.refresh();
  }

  /** Requests still waiting, oldest first. */
  pending(): ExecApprovalRequested[] {
    return [...this.pendingById.values()].map((p) => p.request);
  }

  /** The request waiting under `id`, if any. */
  get(id: string): ExecApprovalRequested | undefined {
    return this.pendingById.get(id)?.request;
  }

  subscribe(listener: (ev: ExecApprovalEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private ask(
    ctx: ExecApprovalContext,
    reason: string,
    toolCall?: { tool: string; args: Record<string, unknown> },
  ): Promise<ExecVerdict> {
    if (ctx.signal.aborted) return Promise.resolve({ allowed: false, reason: "the run was aborted" });
    const now = this.opts.clock.now();
    // Approvers are shown the exact command: masked, `TOKEN=$(touch${IFS}/tmp/x) echo hi` would read
    // `TOKEN=[redacted] echo hi`, and a prompt-injected model could make a payload look harmless. An approver sees
    // only the sessions its token grants. What else leaves this class (the resolved event, the run's `waiting`
    // event, logs) is masked like tool-call args in events.
    const request: ExecApprovalRequested = {
      id: this.newId(),
      command: ctx.command,
      cwd: ctx.cwd,
      agentId: ctx.agentId,
      sessionKey: ctx.sessionKey,
      runId: ctx.runId,
      ...(ctx.toolCallId !== undefined ? { toolCallId: ctx.toolCallId } : {}),
      security: (ctx.effective?.policy ?? this.policy).security,
      ask: (ctx.effective?.policy ?? this.policy).ask,
      reason,
      ...(ctx.effective ? { sandbox: { sandboxed: ctx.effective.sandboxed, reason: ctx.effective.reason } } : {}),
      createdAtMs: now,
      expiresAtMs: now + this.timeoutMs,
      ...(toolCall ? { kind: "tool" as const, tool: toolCall.tool, args: toolCall.args } : {}),
    };
    return new Promise<ExecVerdict>((resolve) => {
      const promptAbort = new AbortController();
      let denyReason: string | undefined;
      const settle: Pending["settle"] = (status, why, decision, approver) => {
        if (!this.pendingById.delete(request.id)) return;
        this.opts.clock.clearTimeout(timer);
        ctx.signal.removeEventListener("abort", onAbort);
        promptAbort.abort();
        const resolved: ExecApprovalResolved = {
          id: request.id,
          sessionKey: request.sessionKey,
          runId: request.runId,
          command: redactText(request.command),
          status,
          ...(decision ? { decision } : {}),
          reason: why,
          resolvedAtMs: this.opts.clock.now(),
        };
        this.remember(resolved);
        if (decision === "allow-always" && !toolCall)
          this.allowAlways.add(ctx.agentId, ctx.command, resolved.resolvedAtMs, approver?.sessions);
        ctx.onSettled?.(resolved);
        this.emit({ type: "resolved", resolved, ...(why === "user" ? { by: approver?.by ?? "an operator" } : {}) });
        if (status === "allowed") return resolve({ allowed: true });
        resolve({ allowed: false, reason: this.denial(status, denyReason, toolCall ? "the call" : "the command") });
      };
      const timer = this.opts.clock.setTimeout(() => settle("expired", "timeout"), this.timeoutMs);
      const onAbort = () => settle("cancelled", "run-aborted");
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      this.pendingById.set(request.id, { request, settle });
      ctx.onWaiting?.(request);
      this.emit({ type: "requested", request });
      const prompt = this.opts.prompt;
      if (prompt) {
        prompt(request, promptAbort.signal).then(
          (answer) => {
            if (typeof answer === "string")
              return settle(answer === "deny" ? "denied" : "allowed", "user", answer, TERMINAL);
            denyReason = answer.deny;
            settle("denied", "user", undefined, TERMINAL);
          },
          (err: Error) => {
            denyReason = `the approval prompt failed: ${err.message}`;
            settle("denied", "user", undefined, TERMINAL);
          },
        );
      }
    });
  }

  private denial(status: ExecApprovalResolved["status"], reason: string | undefined, what: string): string {
    if (reason) return reason;
    if (status === "expired") {
      return `nobody approved ${what} within ${this.timeoutMs / 1000}s (tools.exec.approvalTimeoutSeconds)`;
    }
    if (status === "cancelled") return `the run was aborted while ${what} waited for approval`;
    return `an operator denied ${what}`;
  }

  private remember(resolved: ExecApprovalResolved): void {
    this.ended.set(resolved.id, resolved);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
  }

  private emit(ev: ExecApprovalEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(ev);
      } catch (err) {
        this.opts.logger?.warn(`exec approval listener failed: ${(err as Error).message}`);
      }
    }
  }
}
