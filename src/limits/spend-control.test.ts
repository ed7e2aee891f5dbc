import { afterEach, describe, expect, it } from "vitest";
import { configSchema } from "../config/schema.js";
import { AgentEventBus } from "../infra/events.js";
import { silentLogger } from "../infra/logger.js";
import type { AgentEvent } from "../protocol/agent-events.js";
import { closableModel, readFirstThenStop } from "../providers/early-stop.test-support.js";
import type { ResolvedModel } from "../providers/registry.js";
import type { ModelProvider, ModelStreamEvent, Usage } from "../providers/types.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { ManualClock } from "../testing/manual-clock.js";
import { BudgetExceededError } from "./errors.js";
import { meteredProvider } from "./metered-provider.js";
import { type MeteredRun, SpendControl } from "./spend-control.js";

/*
 * Spend control against a real SQLite store and the in-process bus, on a manual clock: what a run is allowed, what
 * it is refused (before its provider is asked), and what it is told.
 */

const stores: SqliteStoreAdapter[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

const USAGE: Usage = { input: 500, output: 100, cacheRead: 0, cacheWrite: 0, total: 600 };
const PRICED = { input: 10, output: 30, cacheRead: 0, cacheWrite: 0 };

function model(cost?: typeof PRICED): ResolvedModel {
  return {
    ref: "fake/m",
    providerId: "fake",
    modelId: "m",
    api: "openai-completions",
    model: { id: "m", contextWindow: 1000, maxTokens: 100, ...(cost ? { cost } : {}) },
  };
}

/** A provider that counts its calls and reports USAGE. */
function countingProvider(): ModelProvider & { calls: number } {
  const p = {
    id: "fake",
    api: "openai-completions" as const,
    calls: 0,
    async *stream(): AsyncGenerator<ModelStreamEvent> {
      p.calls++;
      yield { type: "done", stopReason: "stop", usage: USAGE };
    },
  };
  return p;
}

function setup(limits: Record<string, unknown>) {
  const store = new SqliteStoreAdapter(new SqliteStore(":memory:"));
  stores.push(store);
  const clock = new ManualClock(Date.UTC(2026, 11, 5, 12));
  const bus = new AgentEventBus({ now: () => clock.now() });
  const events: AgentEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const config = configSchema.parse({ limits }).limits;
  const spend = new SpendControl({ config, store, clock, logger: silentLogger, bus });
  const run = (runId: string, agentId = "main", token?: string): MeteredRun => ({
    runId,
    sessionKey: `agent:${agentId}:main`,
    agentId,
    limits: spend.limitsFor({ agentId, sessionKey: `agent:${agentId}:main`, ...(token ? { token } : {}) }),
  });
  return { store, clock, spend, events, run };
}

async function call(provider: ModelProvider) {
  const ctl = new AbortController();
  for await (const _ of provider.stream({ model: "m", system: "", messages: [], tools: [], signal: ctl.signal })) {
    // drain
  }
}

describe("spend control", () => {
  it("a run that stops reading a call early closes the model's stream; a call without usage is not recorded", async () => {
    const { spend, run, store } = setup({ budgets: [{ scope: "agent", window: "day", maxTokens: 1000 }] });
    const closable = closableModel(3);
    const first = await readFirstThenStop(meteredProvider(spend, run("r1"), model(), closable));
    expect(first).toEqual({ type: "text_delta", delta: "t0" });
    expect(closable.streams[0]?.closedEarly).toBe(true);
    await spend.ledger.flush();
    expect((await store.sumCost({})).calls).toBe(0);
  });

  it("a stop budget lets calls start until the spend reaches it; the next one never reaches the provider", async () => {
    const { spend, run } = setup({ budgets: [{ scope: "agent", window: "day", maxUsd: 0.01 }] });
    const provider = countingProvider();
    const r = run("r1");
    const metered = meteredProvider(spend, r, model(PRICED), provider);
    await call(metered); // $0.008
    await call(metered); // starts at $0.008 < $0.01: allowed, ends at $0.016
    const refused = call(metered);
    await expect(refused).rejects.toBeInstanceOf(BudgetExceededError);
    await expect(refused).rejects.toThrow("budget limits.budgets.0 (day) exhausted: spent $0.0160 of $0.0100");
    expect(provider.calls).toBe(2);
    // another agent has its own budget of that size
    await call(meteredProvider(spend, run("r2", "ops"), model(PRICED), provider));
    expect(provider.calls).toBe(3);
  });

  it("the day's spend is read back from the ledger by a fresh process, and a new day starts from zero", async () => {
    const { spend, run, store, clock } = setup({ budgets: [{ scope: "global", window: "day", maxTokens: 1000 }] });
    const provider = countingProvider();
    await call(meteredProvider(spend, run("r1"), model(), provider));
    await call(meteredProvider(spend, run("r1"), model(), provider));
    await spend.ledger.flush();
    const config = configSchema.parse({ limits: { budgets: [{ scope: "global", window: "day", maxTokens: 1000 }] } });
    const restarted = new SpendControl({
      config: config.limits,
      store,
      clock,
      logger: silentLogger,
      bus: new AgentEventBus(),
    });
    const again = {
      runId: "r3",
      sessionKey: "agent:main:x",
      agentId: "main",
      limits: restarted.limitsFor({ agentId: "main", sessionKey: "agent:main:x" }),
    };
    await expect(call(meteredProvider(restarted, again, model(), provider))).rejects.toThrow(
      "spent 1,200 tokens of 1,000 tokens",
    );
    expect(await restarted.intakeBreach({ agentId: "main", sessionKey: "agent:main:y" })).toBeInstanceOf(
      BudgetExceededError,
    );
    clock.advance(24 * 3600_000);
    expect(await restarted.intakeBreach({ agentId: "main", sessionKey: "agent:main:y" })).toBeUndefined();
  });

  it("an unpriced model counts tokens only: no USD, and the ledger row says so", async () => {
    const { spend, run, store } = setup({ budgets: [{ scope: "agent", window: "day", maxUsd: 0.000001 }] });
    const provider = countingProvider();
    const metered = meteredProvider(spend, run("r1"), model(), provider);
    await call(metered);
    await call(metered); // $0 spent: an unpriced model never crosses a USD budget
    await spend.ledger.flush();
    expect(await store.sumCost({})).toEqual({ usd: 0, tokens: 1200, calls: 2, unpricedCalls: 2 });
  });

  it("limits.run caps: model calls, tokens and duration end the run with the spend reported", async () => {
    const { spend, run, clock } = setup({ run: { maxModelCalls: 2, maxDurationSeconds: 60 } });
    const provider = countingProvider();
    const r = run("r1");
    const metered = meteredProvider(spend, r, model(PRICED), provider);
    await call(metered);
    await call(metered);
    await expect(call(metered)).rejects.toThrow(
      "budget limits.run.maxModelCalls (run) exhausted: spent 2 model calls of 2 model calls (the run spent $0.0160 (1,200 tokens) in 2 model call(s))",
    );
    const slow = run("r2");
    await call(meteredProvider(spend, slow, model(), provider));
    clock.advance(61_000);
    await expect(call(meteredProvider(spend, slow, model(), provider))).rejects.toThrow(
      "budget limits.run.maxDurationSeconds (run) exhausted: spent 61 s of 60 s (the run spent $0.0000 (600 tokens) in 1 model call(s), 1 of them unpriced)",
    );
  });

  it("a pause budget waits for an answer: allow-once lets one call through, raise lets the run go on, and a timeout denies", async () => {
    const { spend, run, events, clock } = setup({
      approvalTimeoutSeconds: 30,
      budgets: [{ id: "ask", scope: "global", window: "run", maxUsd: 0.005, action: "pause" }],
    });
    const provider = countingProvider();
    const r = run("r1");
    const metered = meteredProvider(spend, r, model(PRICED), provider);
    await call(metered);
    const second = call(metered);
    await Promise.resolve();
    const [pending] = spend.approvals.pending();
    expect(pending).toMatchObject({ budget: "ask", runId: "r1", unit: "usd", limit: 0.005 });
    expect(provider.calls).toBe(1);
    spend.approvals.resolve(pending.id, "allow-once", "operator");
    await second;
    expect(provider.calls).toBe(2);

    const third = call(metered);
    await Promise.resolve();
    spend.approvals.resolve(spend.approvals.pending()[0].id, "raise");
    await third;
    await call(metered); // raised: no more questions for this run
    expect(spend.approvals.pending()).toEqual([]);
    expect(provider.calls).toBe(4);

    const other = meteredProvider(spend, run("r2"), model(PRICED), provider);
    await call(other);
    const expiring = call(other);
    await Promise.resolve();
    clock.advance(30_000);
    await expect(expiring).rejects.toThrow("nobody answered within 30 s (limits.approvalTimeoutSeconds)");
    const lifecycle = events
      .filter((e) => e.stream === "lifecycle" && e.runId === "r2")
      .map((e) => e.data as { phase: string; status?: string });
    expect(lifecycle.map((d) => `${d.phase}${d.status ? `:${d.status}` : ""}`)).toEqual(["waiting", "resumed:expired"]);
  });

  it("calls another node announces count against this node's window at once", async () => {
    const { spend, run } = setup({
      syncIntervalMs: 600_000,
      budgets: [{ scope: "global", window: "day", maxUsd: 0.01 }],
    });
    const hear = spend.connectRelay(() => {});
    const provider = countingProvider();
    await call(meteredProvider(spend, run("r1"), model(PRICED), provider)); // loads the window: $0.008
    hear({
      type: "call",
      call: {
        agentId: "ops",
        sessionKey: "agent:ops:main",
        ts: Date.UTC(2026, 11, 5, 12),
        totalTokens: 600,
        costUsd: 0.008,
      },
    });
    expect(await spend.intakeBreach({ agentId: "main", sessionKey: "agent:main:main" })).toBeInstanceOf(
      BudgetExceededError,
    );
  });
});

describe("rate limits per token", () => {
  it("runsPerMinute: the 6th run within a minute is refused with the wait until the oldest leaves the minute", async () => {
    const { spend, clock } = setup({});
    for (let i = 0; i < 5; i++) {
      await spend.rateLimits.check("bridge", { runsPerMinute: 5 }, "gateway.auth.tokens[0].limits");
      spend.acceptedRun("bridge", `r${i}`);
      clock.advance(1000);
    }
    const refused = spend.rateLimits.check("bridge", { runsPerMinute: 5 }, "gateway.auth.tokens[0].limits");
    await expect(refused).rejects.toMatchObject({ code: "rate_limited", retryAfterMs: 55_000, limit: "runsPerMinute" });
    clock.advance(55_000);
    await spend.rateLimits.check("bridge", { runsPerMinute: 5 }, "gateway.auth.tokens[0].limits");
  });

  it("concurrentRuns counts runs until they end; tokensPerDay reads the token's spend today", async () => {
    const { spend, run } = setup({});
    spend.acceptedRun("bridge", "r1");
    await expect(spend.rateLimits.check("bridge", { concurrentRuns: 1 }, "limits.tokens")).rejects.toMatchObject({
      code: "rate_limited",
      limit: "concurrentRuns",
    });
    spend.endedRun("r1");
    await spend.rateLimits.check("bridge", { concurrentRuns: 1 }, "limits.tokens");
    await call(meteredProvider(spend, run("r2", "main", "bridge"), model(), countingProvider()));
    await expect(spend.rateLimits.check("bridge", { tokensPerDay: 600 }, "limits.tokens")).rejects.toMatchObject({
      limit: "tokensPerDay",
      retryAfterMs: 12 * 3600_000,
    });
    await spend.rateLimits.check("other", { tokensPerDay: 600 }, "limits.tokens");
  });
});

describe("budget configuration", () => {
  it("limits.timeZone: a day budget in America/New_York resets at New York's midnight, not UTC's", async () => {
    const budgets = [{ scope: "global", window: "day", maxTokens: 600 }];
    const { spend, run, clock } = setup({ timeZone: "America/New_York", budgets });
    // 12:00 UTC is 07:00 in New York; UTC's midnight comes first (12 h), New York's 5 h later
    await call(meteredProvider(spend, run("r1"), model(), countingProvider()));
    clock.advance(12 * 3600_000 + 60_000);
    expect(await spend.intakeBreach({ agentId: "main", sessionKey: "agent:main:main" })).toBeInstanceOf(
      BudgetExceededError,
    );
    clock.advance(5 * 3600_000);
    expect(await spend.intakeBreach({ agentId: "main", sessionKey: "agent:main:main" })).toBeUndefined();
  });

  it("a rolling window forgets spend older than its hours; limits.syncIntervalMs is how long a sum is trusted before it is re-read", async () => {
    const { spend, run, clock } = setup({
      syncIntervalMs: 1000,
      budgets: [{ scope: "global", window: { rollingHours: 2 }, maxTokens: 600 }],
    });
    await call(meteredProvider(spend, run("r1"), model(), countingProvider()));
    await spend.ledger.flush();
    const who = { agentId: "main", sessionKey: "agent:main:main" };
    expect(await spend.intakeBreach(who)).toBeInstanceOf(BudgetExceededError);
    clock.advance(2 * 3600_000 + 1000);
    expect(await spend.intakeBreach(who)).toBeUndefined();
  });

  it("match picks the agents a budget applies to; without match every agent has a budget of its own", async () => {
    const { spend } = setup({
      budgets: [
        { id: "support-only", scope: "agent", match: "support-*", window: "day", maxUsd: 1 },
        { id: "each-session", scope: "session", window: "run", maxTokens: 10 },
        { id: "bridge", scope: "token", match: "bridge", window: "month", maxUsd: 5, action: "pause" },
      ],
    });
    const ids = (agentId: string, token?: string) =>
      spend
        .limitsFor({ agentId, sessionKey: `agent:${agentId}:main`, ...(token ? { token } : {}) })
        .budgets.map((b) => b.id);
    expect(ids("support-eu")).toEqual(["support-only", "each-session"]);
    expect(ids("main", "bridge")).toEqual(["each-session", "bridge"]);
    expect(ids("main", "other")).toEqual(["each-session"]);
  });

  it("limits.run.maxTokens and maxUsd end a run once its own spend reaches them", async () => {
    const { spend, run } = setup({ run: { maxTokens: 1000, maxUsd: 0.5 } });
    const provider = countingProvider();
    const metered = meteredProvider(spend, run("r1"), model(PRICED), provider);
    await call(metered);
    await call(metered);
    await expect(call(metered)).rejects.toThrow(
      "budget limits.run.maxTokens (run) exhausted: spent 1,200 tokens of 1,000 tokens",
    );
    const cheap = setup({ run: { maxUsd: 0.01 } });
    const m2 = meteredProvider(cheap.spend, cheap.run("r2"), model(PRICED), provider);
    await call(m2);
    await call(m2);
    await expect(call(m2)).rejects.toThrow("budget limits.run.maxUsd (run) exhausted: spent $0.0160 of $0.0100");
  });

  it("limits.ledger: queueSize drops (and counts) rows beyond it, retentionDays and maxRows prune the ledger", async () => {
    const { spend, run, store, clock } = setup({ ledger: { queueSize: 2, retentionDays: 1, maxRows: 1 } });
    const metered = meteredProvider(spend, run("r1"), model(), countingProvider());
    for (let i = 0; i < 3; i++) await call(metered);
    expect(spend.ledger.droppedRows()).toBe(1);
    await spend.ledger.flush();
    expect((await store.sumCost({})).calls).toBe(2);
    const { startCostPruning } = await import("./ledger-retention.js");
    const pruning = startCostPruning({ store, ledger: spend.config.ledger, clock, logger: silentLogger });
    // the pass at start, maxRows 1: the older of the two goes
    await pruning.pruneNow();
    expect((await store.sumCost({})).calls).toBe(1);
    // a day later the hourly pass drops the rest (retentionDays 1)
    clock.advance(24 * 3600_000 + 1);
    await pruning.pruneNow();
    pruning.stop();
    expect((await store.sumCost({})).calls).toBe(0);
  });
});
