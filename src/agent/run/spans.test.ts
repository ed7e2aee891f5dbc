/**
 * OpenTelemetry spans of real runs (SPEC 20): the real runtime, the real openai-completions provider against the fake
 * model server on 127.0.0.1, and an SDK tracer provider with the in-memory exporter registered globally, as a user's
 * preloaded SDK would be.
 */
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  AlwaysOffSampler,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tracingRegistered } from "../../infra/tracing-gate.js";
import { type CapturedRequest, type FakeTurn, openAIErrorTurn } from "../../testing/fake-model-server.js";
import type { Tool } from "../../tools/types.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

const SECRETS = ["PROMPT-SECRET-1111", "ARGS-SECRET-2222", "RESULT-SECRET-3333", "THROWN-SECRET-4444"];

let exporter: InMemorySpanExporter;
let provider: TracerProvider;
const harnesses: RunHarness[] = [];

beforeEach(() => {
  exporter = new InMemorySpanExporter();
  provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  trace.setGlobalTracerProvider(provider);
});
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
  trace.disable();
  await provider.shutdown();
});

async function harness(opts: Parameters<typeof startRunHarness>[0]): Promise<RunHarness> {
  const h = await startRunHarness(opts);
  harnesses.push(h);
  return h;
}

/** A parallel tool that answers with a secret, and two that fail: one returns an error, one throws. */
const tools: Tool[] = [
  {
    name: "lookup",
    description: "looks a key up",
    parameters: { type: "object", properties: { key: { type: "string" } } },
    concurrency: "parallel",
    execute: async (args) => ({ content: `value of ${String(args.key)}: RESULT-SECRET-3333` }),
  },
  {
    name: "refuse",
    description: "always fails",
    parameters: { type: "object", properties: {} },
    concurrency: "parallel",
    execute: async () => ({ content: "refused: RESULT-SECRET-3333", isError: true }),
  },
  {
    name: "explode",
    description: "always throws",
    parameters: { type: "object", properties: {} },
    concurrency: "parallel",
    execute: async () => {
      throw new Error("boom with THROWN-SECRET-4444");
    },
  },
];

/** The model asks for `calls` in its first answer and answers in text once it has the results. */
function toolThenAnswer(calls: FakeTurn["toolCalls"]) {
  return (req: CapturedRequest): FakeTurn => {
    const sawResults = JSON.stringify(req.body.messages).includes('"role":"tool"');
    return sawResults
      ? { text: "done", model: "m-2026-11-30", usage: { input: 40, output: 3, cacheRead: 10 } }
      : { toolCalls: calls, model: "m-2026-11-30", usage: { input: 30, output: 12 } };
  };
}

function spans(): ReadableSpan[] {
  return exporter.getFinishedSpans();
}
const named = (prefix: string) => spans().filter((s) => s.name.startsWith(prefix));
const one = (name: string) => {
  const found = spans().filter((s) => s.name === name);
  expect(found, `spans named ${name}: ${spans().map((s) => s.name)}`).toHaveLength(1);
  return found[0];
};
const id = (s: ReadableSpan) => s.spanContext().spanId;
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

/** Every string a backend would receive from these spans: names, attributes, events, links, status messages. */
function everythingExported(): string {
  return JSON.stringify(
    spans().map((s) => ({
      name: s.name,
      attributes: s.attributes,
      events: s.events,
      links: s.links.map((l) => l.attributes ?? {}),
      status: s.status,
    })),
  );
}

describe("OpenTelemetry spans of a run", () => {
  it("a run with two parallel tool calls is one trace: invoke_agent → attempt → chat and execute_tool siblings", async () => {
    const h = await harness({
      tools,
      respond: toolThenAnswer([
        { id: "call_a", name: "lookup", arguments: { key: "ARGS-SECRET-2222" } },
        { id: "call_b", name: "lookup", arguments: { key: "other" } },
      ]),
    });
    const final = await h.send("look both up, PROMPT-SECRET-1111");
    expect(final.status).toBe("ok");

    const run = one("invoke_agent main");
    const attempt = one("attempt fake/m");
    const chats = named("chat ");
    const toolSpans = named("execute_tool ");
    expect(chats.map((s) => s.name)).toEqual(["chat m", "chat m"]);
    expect(toolSpans.map((s) => s.attributes["gen_ai.tool.call.id"]).sort()).toEqual(["call_a", "call_b"]);

    // one trace; the run is its root, the attempt its child, model and tool calls the attempt's children
    expect(new Set(spans().map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(parentOf(run)).toBeUndefined();
    expect(parentOf(attempt)).toBe(id(run));
    for (const s of [...chats, ...toolSpans]) expect(parentOf(s)).toBe(id(attempt));
    // parallel tool calls do not nest in each other; each links to the model call that asked for it
    const firstChat = chats.find((s) => s.attributes["loopgate.step"] === 1)!;
    for (const s of toolSpans) {
      expect(s.links.map((l) => l.context.spanId)).toEqual([id(firstChat)]);
      expect(s.attributes["loopgate.step"]).toBe(1);
    }

    expect(run.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": "main",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "m",
      "gen_ai.usage.input_tokens": 80,
      "gen_ai.usage.output_tokens": 15,
      "loopgate.run.id": final.runId,
      "loopgate.run.status": "ok",
      "loopgate.model": "fake/m",
    });
    // the conversation is the session's opaque id, never its key
    expect(run.attributes["gen_ai.conversation.id"]).toBe(h.store.getSession("agent:main:test")?.sessionId);
    expect(everythingExported()).not.toContain("agent:main:test");
    expect(attempt.attributes).toMatchObject({ "loopgate.attempt.number": 1, "loopgate.attempt.reason": "first" });
    expect(firstChat.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "m",
      "gen_ai.request.max_tokens": 256,
      "gen_ai.response.model": "m-2026-11-30",
      "gen_ai.response.finish_reasons": ["tool_calls"],
      "gen_ai.usage.input_tokens": 30,
      "gen_ai.usage.output_tokens": 12,
      "server.address": "127.0.0.1",
    });
    const lastChat = chats.find((s) => s.attributes["loopgate.step"] === 2)!;
    expect(lastChat.attributes).toMatchObject({
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": 50,
      "gen_ai.usage.cache_read.input_tokens": 10,
    });
    expect(toolSpans[0].attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "lookup",
      "gen_ai.tool.type": "function",
    });
    for (const s of spans()) expect(s.status.code, s.name).not.toBe(SpanStatusCode.ERROR);
    for (const secret of SECRETS) expect(everythingExported()).not.toContain(secret);
  });

  it("a failing tool ends its span as an error with a kind, never the message; the run still succeeds", async () => {
    const h = await harness({
      tools,
      respond: toolThenAnswer([
        { id: "call_r", name: "refuse", arguments: { why: "ARGS-SECRET-2222" } },
        { id: "call_x", name: "explode", arguments: {} },
      ]),
    });
    const final = await h.send("try both, PROMPT-SECRET-1111");
    expect(final.status).toBe("ok");

    const refused = one("execute_tool refuse");
    const exploded = one("execute_tool explode");
    expect(refused.status.code).toBe(SpanStatusCode.ERROR);
    expect(refused.attributes["error.type"]).toBe("tool_error");
    expect(exploded.status.code).toBe(SpanStatusCode.ERROR);
    expect(exploded.attributes["error.type"]).toBe("Error");
    expect(exploded.events).toEqual([]);
    expect(one("invoke_agent main").status.code).not.toBe(SpanStatusCode.ERROR);
    for (const secret of SECRETS) expect(everythingExported()).not.toContain(secret);
  });

  it("a retry and a fallback are attempts of one run, each saying why it was made", async () => {
    const h = await harness({
      config: (baseUrl) => ({
        agents: { defaults: { model: { primary: "fake/m", fallbacks: ["fake/m2"] } } },
        models: {
          providers: {
            fake: {
              api: "openai-completions",
              baseUrl,
              apiKey: "x",
              retry: { attempts: 1, baseMs: 1, maxMs: 5 },
              models: [
                { id: "m", contextWindow: 128000, maxTokens: 256 },
                { id: "m2", contextWindow: 128000, maxTokens: 256 },
              ],
            },
          },
        },
      }),
      respond: (req) =>
        req.body.model === "m"
          ? openAIErrorTurn(503, "overloaded PROMPT-SECRET-1111", "server_error")
          : { text: "answered by the fallback" },
    });
    const final = await h.send("hello PROMPT-SECRET-1111");
    expect(final.status).toBe("ok");
    expect(final.result.meta.model).toBe("fake/m2");

    const run = one("invoke_agent main");
    const attempts = named("attempt ").sort((a, b) =>
      Number(a.attributes["loopgate.attempt.number"]) > Number(b.attributes["loopgate.attempt.number"]) ? 1 : -1,
    );
    expect(attempts.map((s) => [s.name, s.attributes["loopgate.attempt.reason"]])).toEqual([
      ["attempt fake/m", "first"],
      ["attempt fake/m", "retry"],
      ["attempt fake/m2", "fallback"],
    ]);
    for (const a of attempts) expect(parentOf(a)).toBe(id(run));
    expect(attempts[0].attributes["error.type"]).toBe("server");
    expect(attempts[1].attributes).toMatchObject({ "loopgate.retry.reason": "server", "error.type": "server" });
    expect(attempts[2].attributes).toMatchObject({ "loopgate.fallback.from": "fake/m" });
    expect(typeof attempts[2].attributes["loopgate.fallback.reason"]).toBe("string");
    expect(attempts[2].status.code).not.toBe(SpanStatusCode.ERROR);

    // each attempt has its own model call, the failed ones marked with the provider's error kind
    const chats = named("chat ");
    expect(chats.map((c) => [c.name, c.attributes["error.type"]])).toEqual([
      ["chat m", "server"],
      ["chat m", "server"],
      ["chat m2", undefined],
    ]);
    chats.forEach((c, i) => {
      expect(parentOf(c)).toBe(id(attempts[i]));
    });
    expect(run.attributes).toMatchObject({ "loopgate.run.status": "ok", "loopgate.model": "fake/m2" });
    for (const secret of SECRETS) expect(everythingExported()).not.toContain(secret);
  });

  it("a run that fails ends its span as an error with the run's error kind", async () => {
    const h = await harness({
      respond: () => openAIErrorTurn(401, "invalid key PROMPT-SECRET-1111", "invalid_api_key"),
    });
    const final = await h.send("hello");
    expect(final.status).toBe("error");
    const run = one("invoke_agent main");
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes["error.type"]).toBe("unknown");
    expect(one("chat m").attributes["error.type"]).toBe("auth");
    for (const secret of SECRETS) expect(everythingExported()).not.toContain(secret);
  });
});

describe("spans of other instrumentation", () => {
  it("with a context manager, the Anthropic SDK's own client span nests under Loopgate's chat span", async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const h = await harness({
        config: (baseUrl) => ({
          agents: { defaults: { model: { primary: "anth/claude-x" } } },
          models: {
            providers: {
              anth: {
                api: "anthropic-messages",
                baseUrl,
                apiKey: "x",
                models: [{ id: "claude-x", contextWindow: 128000, maxTokens: 256 }],
              },
            },
          },
        }),
      });
      const final = await h.send("hello");
      expect(final.status).toBe("ok");
      const chat = one("chat claude-x");
      expect(chat.attributes["gen_ai.provider.name"]).toBe("anthropic");
      const sdkSpans = spans().filter((s) => s.instrumentationScope.name.startsWith("com.anthropic"));
      expect(sdkSpans.length).toBeGreaterThan(0);
      for (const s of sdkSpans) expect(parentOf(s)).toBe(id(chat));
    } finally {
      context.disable();
      manager.disable();
    }
  });
});

describe("tracing off", () => {
  it("a run whose span the sampler drops has no spans at all", async () => {
    trace.disable();
    const dropping = new TracerProvider({
      sampler: new AlwaysOffSampler(),
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    trace.setGlobalTracerProvider(dropping);
    const h = await harness({ tools, respond: toolThenAnswer([{ id: "c1", name: "lookup", arguments: {} }]) });
    const final = await h.send("hello");
    expect(final.status).toBe("ok");
    expect(spans()).toEqual([]);
    await dropping.shutdown();
  });

  it("without a registered SDK there is nothing to trace, and a run works the same", async () => {
    trace.disable();
    expect(tracingRegistered()).toBe(false);
    const h = await harness({ tools, respond: toolThenAnswer([{ id: "c1", name: "lookup", arguments: {} }]) });
    const final = await h.send("hello");
    expect(final.status).toBe("ok");
    expect(spans()).toEqual([]);
    trace.setGlobalTracerProvider(provider);
    expect(tracingRegistered()).toBe(true);
  });
});
