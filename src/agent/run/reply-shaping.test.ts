/**
 * What the user sees besides the answer, through a real runtime, a SQLite file and the fake model server speaking
 * the real Chat Completions / Anthropic Messages wire formats: reasoning (off / on / stream), verbose tool
 * summaries, the `message` tool with its hooks and dedupe.
 */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { silentLogger } from "../../infra/logger.js";
import { sqliteRuntime } from "../../node/compose.js";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { estimateCostUsd } from "../../providers/types.js";
import { SqliteStoreAdapter } from "../../storage/sqlite-adapter.js";
import { SqliteStore } from "../../storage/sqlite-store.js";
import { AgentService } from "../service.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

let h: RunHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const of = <S extends AgentEvent["stream"]>(events: AgentEvent[], runId: string, stream: S) =>
  events.filter((e): e is Extract<AgentEvent, { stream: S }> => e.runId === runId && e.stream === stream);

describe("reasoning", () => {
  it("stream: each reasoning delta is its own thinking event, and the payloads hold only the answer", async () => {
    h = await startRunHarness({});
    h.enqueue({ thinking: ["Two plus ", "two is four."], text: "4" });
    const final = await h.send("2+2?", { reasoningLevel: "stream" });

    const thinking = of(h.events, final.runId, "thinking").map((e) => e.data);
    // the block so far rides on the first delta (a checkpoint); the next one adds less than 512 characters
    expect(thinking).toEqual([{ text: "Two plus ", delta: "Two plus " }, { delta: "two is four." }]);
    expect(final.result.payloads).toEqual([{ text: "4" }]);
    // the reasoning comes before the answer
    const seqOf = (s: string) => h!.events.find((e) => e.runId === final.runId && e.stream === s)!.seq;
    expect(seqOf("thinking")).toBeLessThan(seqOf("assistant"));
  });

  it("on: the block goes out once when it ends, and is the first payload, of kind reasoning", async () => {
    h = await startRunHarness({});
    h.enqueue({ thinking: ["Two plus ", "two is four."], text: "4" });
    const final = await h.send("2+2?", { reasoningLevel: "on" });

    expect(of(h.events, final.runId, "thinking").map((e) => e.data)).toEqual([
      { text: "Two plus two is four.", delta: "Two plus two is four." },
    ]);
    expect(final.result.payloads).toEqual([{ text: "Two plus two is four.", kind: "reasoning" }, { text: "4" }]);
  });

  it("off (the default): no thinking events and no reasoning payload, though the model reasoned", async () => {
    h = await startRunHarness({});
    h.enqueue({ thinking: "secret musings", text: "4" });
    const final = await h.send("2+2?");

    expect(of(h.events, final.runId, "thinking")).toEqual([]);
    expect(final.result.payloads).toEqual([{ text: "4" }]);
  });

  it("reasoningDefault per agent beats agents.defaults, and the run's reasoningLevel beats both", async () => {
    h = await startRunHarness({
      config: (baseUrl) => ({
        agents: {
          defaults: { model: { primary: "fake/m" }, reasoningDefault: "stream" },
          list: [{ id: "main", reasoningDefault: "on" }],
        },
        models: { providers: { fake: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "m" }] } } },
      }),
    });
    h.enqueue({ thinking: "ponder", text: "a" }, { thinking: "ponder", text: "b" });
    const byAgent = await h.send("one");
    expect(byAgent.result.payloads[0]).toEqual({ text: "ponder", kind: "reasoning" });
    const byRun = await h.send("two", { reasoningLevel: "off" });
    expect(byRun.result.payloads).toEqual([{ text: "b" }]);
    expect(of(h.events, byRun.runId, "thinking")).toEqual([]);
  });

  it("the reasoning of an attempt thrown away by a fallback is not in the payloads, and clients replace it", async () => {
    h = await startRunHarness({
      config: (baseUrl) => ({
        agents: { defaults: { model: { primary: "fake/m", fallbacks: ["spare/m"] }, reasoningDefault: "on" } },
        models: {
          providers: {
            fake: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "m" }], retry: { attempts: 0 } },
            spare: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "m" }] },
          },
        },
      }),
    });
    // the first model reasons, starts answering, and its connection dies: the run falls back
    h.enqueue(
      { thinking: "stale idea", text: ["half ", "an answer"], stopAfterChunks: 3, dropConnection: true },
      { thinking: "fresh idea", text: "whole answer" },
    );
    const final = await h.send("go");

    expect(final.status).toBe("ok");
    expect(final.result.payloads).toEqual([{ text: "fresh idea", kind: "reasoning" }, { text: "whole answer" }]);
    const thinking = of(h.events, final.runId, "thinking").map((e) => e.data);
    expect(thinking).toEqual([
      { text: "stale idea", delta: "stale idea" },
      { text: "fresh idea", delta: "fresh idea", replace: true },
    ]);
  });

  it("Anthropic thinking signatures survive the transcript: the next turn, from the store, sends the signed block", async () => {
    h = await startRunHarness({
      config: (baseUrl) => ({
        agents: { defaults: { model: { primary: "anth/claude-test" }, thinkingDefault: "low" } },
        models: {
          providers: { anth: { api: "anthropic-messages", baseUrl, apiKey: "x", models: [{ id: "claude-test" }] } },
        },
      }),
    });
    h.enqueue({ thinking: ["Let me ", "count."], thinkingSignature: "EqQBCkgIARABGAIiQL-signed", text: "Three." });
    await h.send("how many?");

    // a second process: a new runtime on the same SQLite file, so the history comes from the store, not a cache
    const store = new SqliteStore(path.join(h.rt.stateDir, "loopgate.sqlite"));
    const rt = sqliteRuntime({
      config: h.rt.config,
      stateDir: h.rt.stateDir,
      store: new SqliteStoreAdapter(store),
      logger: silentLogger,
    });
    try {
      h.enqueue({ text: "Yes." });
      const service = new AgentService(rt);
      const accepted = service.accept({
        message: "sure?",
        idempotencyKey: "second",
        sessionKey: "agent:main:test",
        promptMode: "minimal",
      });
      expect((await service.final((await accepted).runId)).status).toBe("ok");
    } finally {
      store.close();
    }
    const body = h.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
    const assistant = body.messages.find((m) => m.role === "assistant");
    expect(assistant?.content).toEqual([
      { type: "thinking", thinking: "Let me count.", signature: "EqQBCkgIARABGAIiQL-signed" },
      { type: "text", text: "Three." },
    ]);
  });
});

describe("verbose tool summaries", () => {
  const execThenAnswer = (command: string) => [
    { toolCalls: [{ name: "exec", arguments: { command } }] },
    { text: "done" },
  ];

  it("on: one line per tool call, before the answer, secrets redacted", async () => {
    h = await startRunHarness({});
    h.enqueue(...execThenAnswer("echo hi; OPENAI_API_KEY=sk-live-123456789 true"));
    const final = await h.send("run it", { verboseLevel: "on" });

    expect(final.result.payloads).toEqual([
      { text: "🔧 exec: echo hi; OPENAI_API_KEY=[redacted] true", kind: "tool_summary" },
      { text: "done" },
    ]);
  });

  it("a delivered message gets no summary line: the user already has its text", async () => {
    h = await startRunHarness({});
    h.enqueue(
      { toolCalls: [{ name: "message", arguments: { text: "On it." } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "true" } }] },
      { text: "done" },
    );
    const final = await h.send("go", { verboseLevel: "on" });
    expect(final.result.payloads).toEqual([{ text: "🔧 exec: true", kind: "tool_summary" }, { text: "done" }]);
  });

  it("full: the line is followed by the tool's result", async () => {
    h = await startRunHarness({});
    h.enqueue(...execThenAnswer("echo hello-from-exec"));
    const final = await h.send("run it", { verboseLevel: "full" });

    const summary = final.result.payloads.find((p) => p.kind === "tool_summary");
    expect(summary?.text.split("\n")[0]).toBe("🔧 exec: echo hello-from-exec");
    expect(summary?.text).toContain("hello-from-exec\n");
    expect(summary?.text.split("\n").length).toBeGreaterThan(1);
  });

  it("off (the default) and verboseDefault: no summaries unless the config or the run asks", async () => {
    h = await startRunHarness({
      config: (baseUrl) => ({
        agents: { defaults: { model: { primary: "fake/m" } }, list: [{ id: "main", verboseDefault: "on" }] },
        models: { providers: { fake: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "m" }] } } },
      }),
    });
    h.enqueue(...execThenAnswer("true"), ...execThenAnswer("true"));
    const byAgent = await h.send("one");
    expect(byAgent.result.payloads).toEqual([{ text: "🔧 exec: true", kind: "tool_summary" }, { text: "done" }]);
    const byRun = await h.send("two", { verboseLevel: "off" });
    expect(byRun.result.payloads).toEqual([{ text: "done" }]);
  });
});

describe("the message tool", () => {
  const sendThen = (text: string, answer: string) => [
    { toolCalls: [{ name: "message", arguments: { text } }] },
    { text: answer },
  ];

  it("delivers the text at once as a message event; a final answer repeating it is not sent again", async () => {
    h = await startRunHarness({});
    const note = "The build finished: 3 files changed, all tests pass.";
    h.enqueue(...sendThen(note, note));
    const final = await h.send("build it");

    expect(of(h.events, final.runId, "message").map((e) => e.data.text)).toEqual([note]);
    expect(final.result.payloads).toEqual([]);
    // clients see the call, then the message, then the call's result
    const order = h.events
      .filter((e) => e.runId === final.runId && (e.stream === "message" || e.stream === "tool"))
      .map((e) => (e.stream === "tool" ? `tool:${e.data.phase}` : e.stream));
    expect(order).toEqual(["tool:start", "message", "tool:result"]);
  });

  it("an answer that only contains the sent text among much more is kept", async () => {
    h = await startRunHarness({});
    const note = "Build finished.";
    const answer = `Build finished. ${"Here is the full report of every step that ran. ".repeat(3)}`;
    h.enqueue(...sendThen(note, answer));
    const final = await h.send("build it");

    expect(final.result.payloads).toEqual([{ text: answer.trim() }]);
  });

  it("message_sending may rewrite it; message_sent and message:sent see what went out", async () => {
    h = await startRunHarness({});
    const seen: string[] = [];
    h.rt.pluginHooks.on("message_sending", (e) => ({ content: e.content.toUpperCase() }), { pluginId: "t" });
    h.rt.pluginHooks.on("message_sent", (e) => void seen.push(`sent:${e.content}`), { pluginId: "t" });
    h.rt.internalHooks.register<{ content: string }>(
      "message:sent",
      (e) => void seen.push(`internal:${e.context.content}`),
      {
        name: "t",
      },
    );
    h.enqueue(...sendThen("halfway there", "NO_REPLY"));
    const final = await h.send("go");

    expect(of(h.events, final.runId, "message").map((e) => e.data.text)).toEqual(["HALFWAY THERE"]);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(["sent:HALFWAY THERE", "internal:HALFWAY THERE"]);
  });

  it("message_sending cancel: nothing goes out, the model is told, and the answer is not deduped", async () => {
    h = await startRunHarness({});
    // the plugin stops the first outbound message (the tool's) and lets the final reply through
    let calls = 0;
    h.rt.pluginHooks.on("message_sending", () => (++calls === 1 ? { cancel: true } : undefined), { pluginId: "gate" });
    const note = "A message the plugin will stop.";
    h.enqueue(...sendThen(note, note));
    const final = await h.send("go");

    expect(of(h.events, final.runId, "message")).toEqual([]);
    const result = of(h.events, final.runId, "tool").find((e) => e.data.phase === "result");
    expect(result?.data).toMatchObject({ name: "message", isError: true });
    expect(result?.data).toMatchObject({ result: expect.stringMatching(/^not sent: a plugin cancelled the message/) });
    // the user never got the text, so the answer that repeats it is sent
    expect(final.result.payloads).toEqual([{ text: note }]);
  });

  it("no fallback tool-error reply when a message was delivered", async () => {
    h = await startRunHarness({});
    h.enqueue(
      { toolCalls: [{ name: "message", arguments: { text: "Trying the build now." } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "exit 3" } }] },
      { text: "NO_REPLY" },
    );
    const final = await h.send("build");
    expect(final.result.payloads).toEqual([]);

    // without the message, the same failure gets the fallback reply
    h.enqueue({ toolCalls: [{ name: "exec", arguments: { command: "exit 3" } }] }, { text: "NO_REPLY" });
    const alone = await h.send("build again");
    expect(alone.result.payloads).toEqual([{ text: "⚠️ exec failed: (no output)", kind: "error" }]);
  });
});

describe("model entries from an OpenClaw provider block", () => {
  it("name and cost: the result names the model and estimates the run's cost from its usage", async () => {
    h = await startRunHarness({
      config: (baseUrl) => ({
        models: {
          providers: {
            fake: {
              api: "openai-completions",
              baseUrl,
              apiKey: "x",
              models: [
                {
                  id: "m",
                  name: "Fake Model 1",
                  reasoning: true,
                  cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
                },
              ],
            },
          },
        },
      }),
    });
    h.enqueue({ text: "hi", usage: { input: 1000, output: 200 } });
    const final = await h.send("hello");

    expect(final.result.meta.modelName).toBe("Fake Model 1");
    // 1000 × $3/M + 200 × $15/M
    expect(final.result.meta.costUsd).toBeCloseTo(0.006, 9);
    // cache reads and writes have their own rates
    const cost = h.rt.resolveModel("fake/m").model.cost!;
    expect(estimateCostUsd({ input: 0, output: 0, cacheRead: 1e6, cacheWrite: 1e6, total: 2e6 }, cost)).toBe(4.05);
  });

  it("a pasted entry with name and cost loads; a model without cost has no estimate", () => {
    const config = parseConfig({
      models: {
        providers: {
          p: {
            api: "openai-completions",
            models: [{ id: "a", name: "A", cost: { input: 1, output: 2 } }, { id: "b" }],
          },
        },
      },
    });
    expect(config.models.providers.p.models[0]).toMatchObject({
      name: "A",
      cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
    });
    expect(config.models.providers.p.models[1].cost).toBeUndefined();
  });
});
