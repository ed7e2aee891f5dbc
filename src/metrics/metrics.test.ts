import fs from "node:fs";
import type http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { measuredProvider } from "../agent/run/measured-provider.js";
import { metricsRefusal } from "../gateway/metrics-route.js";
import { TokenGrants } from "../gateway/token-grants.js";
import { AgentEventBus } from "../infra/events.js";
import { closableModel, readFirstThenStop } from "../providers/early-stop.test-support.js";
import type { ResolvedModel } from "../providers/registry.js";
import { type ModelProvider, type ModelStreamEvent, ProviderError } from "../providers/types.js";
import { LaneScheduler } from "../queue/lanes.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { LoopgateMetrics, labelCode } from "./catalog.js";
import { laneKind } from "./gauges.js";
import { modelCallMeter } from "./model-call-meter.js";
import { NodeMetrics } from "./node-metrics.js";
import { RunMetrics } from "./run-metrics.js";
import { timedStore } from "./timed-store.js";

type Values = Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>;
async function values(metric: { get(): Promise<{ values: Values }> }): Promise<Values> {
  return (await metric.get()).values;
}
async function seriesValue(
  metric: { get(): Promise<{ values: Values }> },
  labels: Record<string, string>,
  name?: string,
) {
  const found = (await values(metric)).find(
    (v) =>
      (name === undefined || v.metricName === name) &&
      Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l) &&
      Object.keys(v.labels).filter((k) => k !== "le").length === Object.keys(labels).length,
  );
  return found?.value;
}

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

describe("run metrics from the bus", () => {
  it("a run's end counts it by agent and status, times it from its start, and its first text gives time to first token", async () => {
    let now = 1_000;
    const bus = new AgentEventBus({ now: () => now });
    const metrics = new LoopgateMetrics();
    const live = new Map([["r1", "writer"]]);
    const runs = new RunMetrics(metrics, (id) => live.get(id));
    runs.attach(bus);
    bus.emit("r1", "hook:abc", "lifecycle", { phase: "start", startedAt: 1_000 });
    // the queue forgets the run before its end: the agent seen at start is kept
    live.delete("r1");
    now = 1_250;
    bus.emit("r1", "hook:abc", "assistant", { delta: "Hi" });
    now = 1_400;
    bus.emit("r1", "hook:abc", "assistant", { delta: " there" });
    bus.emit("r1", "hook:abc", "lifecycle", {
      phase: "retry",
      attempt: 1,
      delayMs: 5,
      reason: "rate_limit",
      model: "a/b",
    });
    bus.emit("r1", "hook:abc", "lifecycle", { phase: "fallback", from: "a/b", to: "c/d", reason: "server" });
    bus.emit("r1", "hook:abc", "tool", {
      phase: "result",
      name: "read",
      toolCallId: "t1",
      isError: false,
      result: "x",
    });
    bus.emit("r1", "hook:abc", "tool", {
      phase: "result",
      name: "exec",
      toolCallId: "t2",
      isError: false,
      result: "",
      skipped: "blocked",
    });
    bus.emit("r1", "hook:abc", "compaction", {
      phase: "end",
      reason: "overflow",
      completed: true,
      willRetry: true,
      tokensBefore: 10,
      tokensAfter: 5,
      outcome: "compacted",
    });
    bus.emit("r1", "hook:abc", "lifecycle", {
      phase: "end",
      startedAt: 1_000,
      endedAt: 3_000,
      status: "ok",
      stopReason: "stop",
      usage,
    });
    // a message dropped from its queue never started: its agent comes from its key, and it has no duration
    bus.emit("r2", "agent:helper:x", "lifecycle", {
      phase: "error",
      endedAt: 3_000,
      status: "error",
      stopReason: "dropped",
      kind: "dropped",
    });

    expect(await seriesValue(metrics.runs, { agent: "writer", status: "ok" })).toBe(1);
    expect(await seriesValue(metrics.runs, { agent: "helper", status: "error" })).toBe(1);
    expect(
      await seriesValue(metrics.runDuration, { agent: "writer", status: "ok" }, "loopgate_run_duration_seconds_sum"),
    ).toBe(2);
    expect(
      await seriesValue(
        metrics.runDuration,
        { agent: "helper", status: "error" },
        "loopgate_run_duration_seconds_count",
      ),
    ).toBeUndefined();
    // the first text only: 250 ms, not the second delta's 400
    expect(
      await seriesValue(metrics.timeToFirstToken, { agent: "writer" }, "loopgate_run_time_to_first_token_seconds_sum"),
    ).toBe(0.25);
    expect(await seriesValue(metrics.retries, { reason: "rate_limit" })).toBe(1);
    expect(await seriesValue(metrics.fallbacks, { reason: "server" })).toBe(1);
    expect(await seriesValue(metrics.toolCalls, { outcome: "ok" })).toBe(1);
    expect(await seriesValue(metrics.toolCalls, { outcome: "blocked" })).toBe(1);
    expect(await seriesValue(metrics.compactions, { reason: "overflow", outcome: "compacted" })).toBe(1);
    runs.detach();
    bus.emit("r3", "agent:main:y", "lifecycle", { phase: "error", endedAt: 1, status: "error", stopReason: "x" });
    expect(await seriesValue(metrics.runs, { agent: "main", status: "error" })).toBeUndefined();
  });

  it("a label from an event that does not look like a code is exported as other, never as text", () => {
    expect(labelCode("rate_limit")).toBe("rate_limit");
    expect(labelCode("the user said: my phone is 555 1234")).toBe("other");
    expect(labelCode("x".repeat(65))).toBe("other");
    expect(labelCode(undefined)).toBe("unknown");
  });
});

const model = {
  ref: "p/m",
  providerId: "p",
  modelId: "m",
  api: "openai-completions",
  model: { id: "m", contextWindow: 1000, maxTokens: 100, cost: { input: 10, output: 30, cacheRead: 1, cacheWrite: 0 } },
} as unknown as ResolvedModel;

function provider(events: ModelStreamEvent[], fail?: Error): ModelProvider {
  return {
    id: "p",
    api: "openai-completions",
    async *stream() {
      yield* events;
      if (fail) throw fail;
    },
  };
}

async function drain(p: ModelProvider, stopAfter = Number.POSITIVE_INFINITY): Promise<void> {
  let n = 0;
  try {
    for await (const _ of p.stream({} as never)) if (++n >= stopAfter) break;
  } catch {
    // the failure is what is measured
  }
}

describe("model calls", () => {
  it("each call is counted by outcome, and a finished call adds its tokens and their cost", async () => {
    const metrics = new LoopgateMetrics();
    let t = 0;
    const meter = modelCallMeter(metrics, () => t);
    const done: ModelStreamEvent = {
      type: "done",
      stopReason: "stop",
      usage: { input: 1000, output: 100, cacheRead: 500, cacheWrite: 0, total: 1600 },
    };
    t = 0;
    await drain(measuredProvider(meter, model, provider([{ type: "text_delta", delta: "hi" }, done])));
    await drain(measuredProvider(meter, model, provider([], new ProviderError("rate_limit", "slow down"))));
    await drain(measuredProvider(meter, model, provider([], new Error("socket hang up"))));
    // the reader stopped after the first chunk (an abort between chunks)
    await drain(measuredProvider(meter, model, provider([{ type: "text_delta", delta: "a" }, done])), 1);

    const call = { provider: "p", model: "m" };
    expect(await seriesValue(metrics.modelCalls, { ...call, outcome: "ok" })).toBe(1);
    expect(await seriesValue(metrics.modelCalls, { ...call, outcome: "rate_limit" })).toBe(1);
    expect(await seriesValue(metrics.modelCalls, { ...call, outcome: "error" })).toBe(1);
    expect(await seriesValue(metrics.modelCalls, { ...call, outcome: "aborted" })).toBe(1);
    expect(await seriesValue(metrics.modelTokens, { ...call, type: "input" })).toBe(1000);
    expect(await seriesValue(metrics.modelTokens, { ...call, type: "output" })).toBe(100);
    expect(await seriesValue(metrics.modelTokens, { ...call, type: "cache_read" })).toBe(500);
    // (1000 × 10 + 100 × 30 + 500 × 1) / 1e6
    expect(await seriesValue(metrics.modelCost, call)).toBeCloseTo(0.0135, 9);
    expect(await seriesValue(metrics.modelCallDuration, call, "loopgate_model_call_duration_seconds_count")).toBe(4);
  });

  it("a reader that stops after the first chunk closes the model's stream, and the call counts as aborted", async () => {
    const metrics = new LoopgateMetrics();
    const meter = modelCallMeter(metrics, () => 0);
    const closable = closableModel(3, "p");
    const first = await readFirstThenStop(measuredProvider(meter, model, closable));
    expect(first).toEqual({ type: "text_delta", delta: "t0" });
    expect(closable.streams[0]?.closedEarly).toBe(true);
    expect(await seriesValue(metrics.modelCalls, { provider: "p", model: "m", outcome: "aborted" })).toBe(1);
  });

  it("without a meter the provider is the same object: nothing is wrapped when metrics are off", () => {
    const p = provider([]);
    expect(measuredProvider(undefined, model, p)).toBe(p);
  });
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("store latency", () => {
  it("every store call is timed by method and outcome, and answers exactly what the store answers", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-metrics-"));
    dirs.push(dir);
    const engine = new SqliteStore(path.join(dir, "loopgate.sqlite"));
    const store = new SqliteStoreAdapter(engine);
    const metrics = new LoopgateMetrics();
    let t = 0;
    const timed = timedStore(
      store,
      (method, s, failed) => metrics.storeCalls.observe({ method, outcome: failed ? "error" : "ok" }, s),
      () => (t += 2),
    );
    expect(timed.kind).toBe(store.kind);
    const session = await timed.ensureSession("agent:main:a", "main", 1);
    expect(await timed.getSession("agent:main:a")).toEqual(session);
    expect(await timed.getSession("agent:main:none")).toBeUndefined();
    engine.close();
    await expect(timed.getSession("agent:main:a")).rejects.toThrow();

    const count = "loopgate_store_call_duration_seconds_count";
    expect(await seriesValue(metrics.storeCalls, { method: "ensureSession", outcome: "ok" }, count)).toBe(1);
    expect(await seriesValue(metrics.storeCalls, { method: "getSession", outcome: "ok" }, count)).toBe(2);
    expect(await seriesValue(metrics.storeCalls, { method: "getSession", outcome: "error" }, count)).toBe(1);
    // each call took one tick of the fake clock: 2 ms
    expect(
      await seriesValue(
        metrics.storeCalls,
        { method: "ensureSession", outcome: "ok" },
        "loopgate_store_call_duration_seconds_sum",
      ),
    ).toBe(0.002);
  });
});

describe("scrape-time gauges and the render", () => {
  it("session lanes are summed into one series, and lanes a request named other than main and cron are other", async () => {
    expect(laneKind("session:agent:main:x")).toBe("session");
    expect(laneKind("main")).toBe("main");
    expect(laneKind("cron")).toBe("cron");
    expect(laneKind("anything-a-client-sends")).toBe("other");
    const lanes = new LaneScheduler();
    const held = await Promise.all([
      lanes.acquire("session:agent:main:a"),
      lanes.acquire("session:agent:main:b"),
      lanes.acquire("main"),
      lanes.acquire("x-client-lane"),
    ]);
    const waiting = lanes.acquire("session:agent:main:a");
    const seen: Array<[string, number, number]> = [];
    lanes.forEachLane((lane, s) => seen.push([laneKind(lane), s.active, s.queued]));
    expect(seen.sort()).toEqual([
      ["main", 1, 0],
      ["other", 1, 0],
      ["session", 1, 0],
      ["session", 1, 1],
    ]);
    for (const h of held) h.release();
    (await waiting).release();
  });

  it("scrapes that arrive while one is rendered share it: gauges are read once for all of them", async () => {
    const node = new NodeMetrics();
    let reads = 0;
    node.metrics.gauge("loopgate_test_reads", "how often the gauge was read", [], (g) => g.set(++reads));
    const texts = await Promise.all(Array.from({ length: 50 }, () => node.render()));
    expect(reads).toBe(1);
    expect(new Set(texts).size).toBe(1);
    expect(texts[0]).toContain("loopgate_test_reads 1");
    expect(texts[0]).toContain("process_resident_memory_bytes");
    await node.render();
    expect(reads).toBe(2);
  });
});

describe("who may scrape", () => {
  const req = (remoteAddress: string, authorization?: string) =>
    ({ socket: { remoteAddress }, headers: authorization ? { authorization } : {} }) as unknown as http.IncomingMessage;

  it("without tokens, loopback clients only: any other address is refused 403 with what to configure", () => {
    const none = new TokenGrants(undefined, []);
    expect(metricsRefusal(req("127.0.0.1"), none)).toBeUndefined();
    expect(metricsRefusal(req("::1"), none)).toBeUndefined();
    expect(metricsRefusal(req("::ffff:127.0.0.1"), none)).toBeUndefined();
    const far = metricsRefusal(req("10.0.0.5"), none);
    expect(far?.status).toBe(403);
    expect(far?.error).toMatch(/loopback clients only .*gateway.auth.token/);
  });

  it("with the single gateway token, a loopback client still has to present it", () => {
    const single = new TokenGrants("s3cret", []);
    expect(metricsRefusal(req("127.0.0.1"), single)?.status).toBe(401);
    expect(metricsRefusal(req("10.0.0.5", "Bearer s3cret"), single)).toBeUndefined();
    expect(JSON.stringify(metricsRefusal(req("10.0.0.5", "Bearer nope"), single))).not.toContain("s3cret");
  });
});
