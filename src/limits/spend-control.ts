/**
 * Spend control for one process (SPEC 25): resolves each run's limits, checks them before every model call, and
 * records every call's usage (priced with the model that served it) in the cost ledger and the in-memory window
 * sums. Built once by the composition root (node/compose.ts) and reached by a run only through its provider
 * decorator (limits/metered-provider.ts) and its profile's `limits` slot.
 */
import { randomUUID } from "node:crypto";
import type { EventBusPort } from "../events/bus-port.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { UsageSummaryResult } from "../protocol/usage.js";
import type { ModelCost, Usage } from "../providers/types.js";
import type { CostRow, Store } from "../storage/types.js";
import { BudgetApprovals } from "./budget-approvals.js";
import { type AppliedBudget, type LimitsConfig, type RunLimits, resolveRunLimits, type Spender } from "./budgets.js";
import { CostLedger } from "./cost-ledger.js";
import { type BudgetBreach, BudgetExceededError, describeBreach } from "./errors.js";
import { priceCall } from "./prices.js";
import { TokenRateLimiter } from "./rate-limits.js";
import { summarizeUsage } from "./usage-summary.js";
import { type CountedCall, type Spent, WindowSums } from "./window-sums.js";
import { windowName, windowRange } from "./windows.js";

/** A run as the meter sees it: who spends, and its limits (the profile's slot). */
export interface MeteredRun {
  runId: string;
  sessionKey: string;
  agentId: string;
  limits: RunLimits | undefined;
  /** the run's auth profiles (credentials/), which name the profile that served a call */
  credentials?: { usedOn(providerId: string): string | undefined };
}

/** The model that served a call, as priced. */
export interface ServedBy {
  provider: string;
  model: string;
  cost?: ModelCost;
  authProfile?: string;
}

/** What one node tells the others about a call (limits/spend-relay.ts): with its cost row's id, so it counts once. */
export type CallNotice = CountedCall;

/** What nodes tell each other (limits/spend-relay.ts): calls, and runs a token started and that ended. */
export type SpendNotice =
  | { type: "call"; call: CallNotice }
  | { type: "accepted"; token: string; runId: string; at: number }
  | { type: "ended"; runId: string };

export interface SpendControlOptions {
  config: LimitsConfig;
  store: Pick<Store, "sumCost" | "appendCostRows" | "listCostRows">;
  clock: Clock;
  logger: Logger;
  /** where a paused run's `waiting` / `resumed` lifecycle events go */
  bus: Pick<EventBusPort, "emit">;
  newId?: () => string;
}

export class SpendControl {
  readonly ledger: CostLedger;
  readonly approvals: BudgetApprovals;
  /** the per-token intake limits (gateway intake) */
  readonly rateLimits: TokenRateLimiter;
  private readonly sums: WindowSums;
  private readonly newId: () => string;
  /** tells the other nodes about each call and run; set by the relay on Postgres */
  private announce: ((notice: SpendNotice) => void) | undefined;

  constructor(private opts: SpendControlOptions) {
    this.newId = opts.newId ?? randomUUID;
    this.ledger = new CostLedger({
      store: opts.store,
      clock: opts.clock,
      logger: opts.logger,
      queueSize: opts.config.ledger.queueSize,
    });
    this.sums = new WindowSums({
      store: opts.store,
      clock: opts.clock,
      syncIntervalMs: opts.config.syncIntervalMs,
      unwritten: () => this.ledger.unwritten(),
    });
    this.approvals = new BudgetApprovals({
      clock: opts.clock,
      timeoutMs: opts.config.approvalTimeoutSeconds * 1000,
      newId: this.newId,
      onListenerError: (err) => opts.logger.warn(`budget approval listener failed: ${err.message}`),
    });
    this.rateLimits = new TokenRateLimiter({ clock: opts.clock, tokensToday: (token) => this.tokensToday(token) });
  }

  get config(): LimitsConfig {
    return this.opts.config;
  }

  /**
   * A reloaded `limits` (SPEC 26): budgets, run caps, token rate limits and the time zone apply to the next run and
   * intake; the ledger, sync and approval settings were built at start (config/changes.ts: restart keys).
   */
  reconfigure(config: LimitsConfig): void {
    this.opts = { ...this.opts, config };
  }

  /** The run's limits, for its profile. */
  limitsFor(who: Spender): RunLimits {
    return resolveRunLimits(this.opts.config, who, this.opts.clock.now());
  }

  /** Announces this node's calls and runs to the other nodes (`announce`), and returns how to hear theirs. */
  connectRelay(announce: (notice: SpendNotice) => void): (notice: SpendNotice) => void {
    this.announce = announce;
    return (notice) => this.hear(notice);
  }

  /** A run a token started was accepted here: it counts against the token's rate limits until `endedRun`. */
  acceptedRun(token: string, runId: string): void {
    const at = this.opts.clock.now();
    this.rateLimits.accepted(token, runId, at);
    this.announce?.({ type: "accepted", token, runId, at });
  }

  endedRun(runId: string): void {
    this.rateLimits.ended(runId);
    this.announce?.({ type: "ended", runId });
  }

  private hear(notice: SpendNotice): void {
    if (notice.type === "call") this.sums.add(notice.call);
    else if (notice.type === "accepted") this.rateLimits.accepted(notice.token, notice.runId, notice.at);
    else this.rateLimits.ended(notice.runId);
  }

  /**
   * Before a model call: throws BudgetExceededError when a run cap or a `stop` budget is used up, waits for an
   * operator when a `pause` budget is (and throws when denied, expired or aborted). Memory lookups, except the
   * first check of a window on this node and one per sync interval.
   */
  async beforeCall(run: MeteredRun, signal: AbortSignal): Promise<void> {
    const limits = run.limits;
    if (!limits) return;
    const cap = this.capBreach(limits);
    if (cap) throw this.stopped(run, cap);
    for (const b of limits.budgets) {
      const breach = overLimit(b, await this.spentOn(b, limits));
      if (!breach) continue;
      if (b.action === "stop") throw this.stopped(run, breach);
      if (limits.meter.raised.has(b.id)) continue;
      await this.pause(run, b, breach, signal);
    }
  }

  /** After a model call: its usage priced with the model that served it, in the run's meter, the sums and the ledger. */
  recordCall(run: MeteredRun, servedBy: ServedBy, usage: Usage): void {
    const priced = priceCall(usage, servedBy.cost);
    const meter = run.limits?.meter;
    if (meter) {
      meter.usd += priced.usd ?? 0;
      meter.tokens += priced.tokens;
      if (priced.usd === undefined) meter.unpriced++;
    }
    const token = run.limits?.spender.token;
    const row: CostRow = {
      id: this.newId(),
      ts: this.opts.clock.now(),
      runId: run.runId,
      sessionKey: run.sessionKey,
      agentId: run.agentId,
      ...(token !== undefined ? { token } : {}),
      provider: servedBy.provider,
      model: servedBy.model,
      ...(servedBy.authProfile !== undefined ? { authProfile: servedBy.authProfile } : {}),
      inputTokens: usage.input,
      outputTokens: usage.output,
      cacheReadTokens: usage.cacheRead,
      cacheWriteTokens: usage.cacheWrite,
      totalTokens: priced.tokens,
      ...(priced.usd !== undefined ? { costUsd: priced.usd } : {}),
    };
    this.sums.add(row);
    this.ledger.add(row);
    this.announce?.({ type: "call", call: row });
  }

  /**
   * At intake: the first `stop` budget whose day, month or rolling window is already used up for this sender (a
   * message sent now would be refused before its first model call). `run` windows start fresh with every run.
   */
  async intakeBreach(who: Spender): Promise<BudgetExceededError | undefined> {
    const limits = this.limitsFor(who);
    for (const b of limits.budgets) {
      if (b.window === "run" || b.action !== "stop") continue;
      const breach = overLimit(b, await this.spentOn(b, limits));
      if (breach) return new BudgetExceededError(breach, "refused at intake; nothing was stored");
    }
    return undefined;
  }

  /** usage.summary: the ledger per day and group (this node's unwritten rows are written first, so they count). */
  async usageSummary(q: Omit<Parameters<typeof summarizeUsage>[1], "timeZone">): Promise<UsageSummaryResult> {
    await this.ledger.flush();
    return summarizeUsage(this.opts.store, { ...q, timeZone: this.opts.config.timeZone });
  }

  /** The tokens `token` used today (limits.timeZone), from the window sums: the rate limits' tokensPerDay. */
  async tokensToday(token: string): Promise<{ tokens: number; dayEndsAt: number }> {
    const now = this.opts.clock.now();
    const range = windowRange("day", now, this.opts.config.timeZone);
    const spent = await this.sums.spent(
      `token-day:${token}:${range.start}`,
      { token },
      {
        since: range.start,
        until: range.end,
        rolling: false,
      },
    );
    return { tokens: spent.tokens, dayEndsAt: range.end };
  }

  private async spentOn(b: AppliedBudget, limits: RunLimits): Promise<Spent> {
    if (b.window === "run") return limits.meter;
    const now = this.opts.clock.now();
    const range = windowRange(b.window, now, this.opts.config.timeZone);
    const rolling = typeof b.window === "object";
    const key = `${b.id}:${JSON.stringify(b.subject)}:${rolling ? "rolling" : range.start}`;
    return this.sums.spent(key, b.subject, { since: range.start, until: range.end, rolling });
  }

  private capBreach(limits: RunLimits): BudgetBreach | undefined {
    const { caps, meter } = limits;
    const cap = (key: string, unit: BudgetBreach["unit"], spent: number, limit: number | undefined) =>
      limit !== undefined && spent >= limit
        ? { budget: `limits.run.${key}`, window: "run", unit, spent, limit }
        : undefined;
    return (
      cap("maxModelCalls", "calls", meter.calls, caps.maxModelCalls) ??
      cap("maxTokens", "tokens", meter.tokens, caps.maxTokens) ??
      cap("maxUsd", "usd", meter.usd, caps.maxUsd) ??
      cap("maxDurationSeconds", "seconds", (this.opts.clock.now() - limits.startedAt) / 1000, caps.maxDurationSeconds)
    );
  }

  /** The error that ends the run, with its spend so far in the message, and its log line. */
  private stopped(run: MeteredRun, breach: BudgetBreach, why?: string): BudgetExceededError {
    const meter = run.limits?.meter;
    const spend = meter ? runSpend(meter) : "";
    const err = new BudgetExceededError(breach, [why, spend].filter(Boolean).join("; ") || undefined);
    this.opts.logger.warn(`budget stop: run ${run.runId} (${run.sessionKey}): ${err.message}`, {
      runId: run.runId,
      sessionKey: run.sessionKey,
      budget: breach.budget,
    });
    return err;
  }

  private async pause(run: MeteredRun, b: AppliedBudget, breach: BudgetBreach, signal: AbortSignal): Promise<void> {
    const { bus, logger } = this.opts;
    const resolved = await this.approvals.ask(
      {
        runId: run.runId,
        sessionKey: run.sessionKey,
        agentId: run.agentId,
        budget: b.id,
        window: windowName(b.window),
        unit: breach.unit === "usd" ? "usd" : "tokens",
        spent: breach.spent,
        limit: breach.limit,
      },
      signal,
      (request) => {
        logger.info(
          `budget pause: run ${run.runId} (${run.sessionKey}) waits for approval ${request.id}: ${describeBreach(breach)}`,
          {
            runId: run.runId,
            approvalId: request.id,
          },
        );
        bus.emit(run.runId, run.sessionKey, "lifecycle", {
          phase: "waiting",
          for: "budget",
          approvalId: request.id,
          budget: b.id,
          window: request.window,
          unit: request.unit,
          spent: request.spent,
          limit: request.limit,
          expiresAtMs: request.expiresAtMs,
        });
      },
    );
    bus.emit(run.runId, run.sessionKey, "lifecycle", {
      phase: "resumed",
      for: "budget",
      approvalId: resolved.id,
      status: resolved.status,
      ...(resolved.decision ? { decision: resolved.decision } : {}),
    });
    if (resolved.status === "allowed") {
      if (resolved.decision === "raise") run.limits?.meter.raised.add(b.id);
      return;
    }
    const why =
      resolved.status === "expired"
        ? `nobody answered within ${this.opts.config.approvalTimeoutSeconds} s (limits.approvalTimeoutSeconds)`
        : resolved.status === "cancelled"
          ? "the run was aborted while it waited for approval"
          : "an operator denied more spend";
    throw this.stopped(run, breach, why);
  }
}

function overLimit(b: AppliedBudget, spent: Spent): BudgetBreach | undefined {
  const window = windowName(b.window);
  if (b.maxUsd !== undefined && spent.usd >= b.maxUsd) {
    return { budget: b.id, window, unit: "usd", spent: spent.usd, limit: b.maxUsd };
  }
  if (b.maxTokens !== undefined && spent.tokens >= b.maxTokens) {
    return { budget: b.id, window, unit: "tokens", spent: spent.tokens, limit: b.maxTokens };
  }
  return undefined;
}

/** "the run spent $0.0123 (1,234 tokens) in 5 model calls", unpriced calls named. */
function runSpend(m: RunLimits["meter"]): string {
  const unpriced = m.unpriced > 0 ? `, ${m.unpriced} of them unpriced` : "";
  return `the run spent $${m.usd.toFixed(4)} (${m.tokens.toLocaleString("en-US")} tokens) in ${m.calls} model call(s)${unpriced}`;
}
