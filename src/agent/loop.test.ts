import { describe, expect, it } from "vitest";
import { ScriptedProvider, type ScriptedTurn } from "../providers/scripted.js";
import {
  type AssistantMessage,
  type ChatMessage,
  ProviderError,
  type ToolResultMessage,
  type UserMessage,
} from "../providers/types.js";
import type { Tool, ToolContext, ToolOutput } from "../tools/types.js";
import {
  type LoopEvent,
  type LoopInput,
  type LoopOutcome,
  type LoopPorts,
  runAgentLoop,
  SKIPPED_FOR_STEER,
  type SteeringPort,
} from "./loop.js";

// ---------------------------------------------------------------------------------------------------------------
// helpers

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets pending promise callbacks run; fails (instead of hanging the suite) when `cond` never becomes true. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

/** Gives every runnable callback a chance to run, so "X has not started" means it really was held back. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

function fakeTool(
  name: string,
  execute: (args: Record<string, unknown>, ctx: ToolContext) => Promise<ToolOutput>,
  concurrency: Tool["concurrency"] = "parallel",
): Tool {
  return { name, description: `fake ${name}`, parameters: { type: "object", properties: {} }, concurrency, execute };
}

/** A scripted model that also records a copy of every request's messages. */
function scriptedModel(turns: ScriptedTurn[]) {
  const requests: ChatMessage[][] = [];
  const provider = new ScriptedProvider("fake", (request, index) => {
    requests.push(structuredClone(request.messages));
    return turns[index] ?? { text: "(script exhausted)" };
  });
  return { provider, requests };
}

function makePorts(provider: LoopPorts["provider"], tools: Tool[], extra: Partial<LoopPorts> = {}): LoopPorts {
  return {
    provider,
    tools: new Map(tools.map((t) => [t.name, t])),
    signal: new AbortController().signal,
    toolContext: { workspaceDir: "/nonexistent-workspace" },
    ...extra,
  };
}

const userSays = (text: string): UserMessage => ({ role: "user", content: text });

function input(extra: Partial<LoopInput> = {}): LoopInput {
  return { model: "m", messages: [userSays("hello")], maxSteps: 10, ...extra };
}

interface Run {
  events: LoopEvent[];
  done: Promise<LoopOutcome>;
}

/** Drives the loop like the runner does; `events` fills in while it runs, `onEvent` may act on each one. */
function start(loopInput: LoopInput, ports: LoopPorts, onEvent?: (ev: LoopEvent) => void): Run {
  const events: LoopEvent[] = [];
  const gen = runAgentLoop(loopInput, ports);
  const done = (async () => {
    while (true) {
      const next = await gen.next();
      if (next.done) return next.value;
      events.push(next.value);
      onEvent?.(next.value);
    }
  })();
  return { events, done };
}

const messagesOf = (events: LoopEvent[]): ChatMessage[] =>
  events.flatMap((e) => (e.type === "message" ? [e.message] : []));

const toolResultsOf = (events: LoopEvent[]): ToolResultMessage[] =>
  messagesOf(events).filter((m): m is ToolResultMessage => m.role === "toolResult");

const assistantsOf = (events: LoopEvent[]): AssistantMessage[] =>
  messagesOf(events).filter((m): m is AssistantMessage => m.role === "assistant");

/** The transcript invariant: every yielded tool call is answered exactly once, after the call. */
function expectEveryCallAnsweredOnce(messages: ChatMessage[]): void {
  const calls: string[] = [];
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    for (const block of m.content) {
      if (block.type !== "toolCall") continue;
      calls.push(block.id);
      const answers = messages.filter((r) => r.role === "toolResult" && r.toolCallId === block.id);
      expect(answers, `tool call ${block.id} must have exactly one result`).toHaveLength(1);
      expect(messages.indexOf(answers[0]), `result of ${block.id} comes after the call`).toBeGreaterThan(i);
    }
  });
  for (const m of messages) {
    if (m.role === "toolResult") expect(calls, `result ${m.toolCallId} answers a yielded call`).toContain(m.toolCallId);
  }
}

// ---------------------------------------------------------------------------------------------------------------

describe("runAgentLoop: tool turns", () => {
  it("runs model → tool → model → final answer and feeds the tool result back to the model", async () => {
    const { provider, requests } = scriptedModel([
      { text: "Let me check.", toolCalls: [{ id: "c1", name: "lookup", arguments: { city: "Lisbon" } }] },
      { text: "It is {{lastToolResult}}." },
    ]);
    const seenArgs: unknown[] = [];
    const lookup = fakeTool("lookup", async (args) => {
      seenArgs.push(args);
      return { content: "sunny in Lisbon" };
    });

    const run = start(input(), makePorts(provider, [lookup]));
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("stop");
    expect(outcome.steps).toBe(2);
    expect(outcome.finalText).toBe("It is sunny in Lisbon.");
    expect(seenArgs).toEqual([{ city: "Lisbon" }]);

    const messages = messagesOf(run.events);
    expect(messages.map((m) => m.role)).toEqual(["assistant", "toolResult", "assistant"]);
    expect(messages[1]).toMatchObject({
      toolCallId: "c1",
      toolName: "lookup",
      content: "sunny in Lisbon",
      isError: false,
    });

    // the second model call sees the user message, its own tool call and the result
    expect(requests).toHaveLength(2);
    expect(requests[1].map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(requests[1][2]).toMatchObject({ toolCallId: "c1", content: "sunny in Lisbon" });

    const toolEvents = run.events.filter((e) => e.type === "tool_start" || e.type === "tool_end");
    expect(toolEvents).toEqual([
      { type: "tool_start", toolCallId: "c1", name: "lookup", args: { city: "Lisbon" } },
      expect.objectContaining({ type: "tool_end", toolCallId: "c1", isError: false, result: "sunny in Lisbon" }),
    ]);
  });

  it("starts two parallel tools of one turn together and returns their results in the model's order", async () => {
    const { provider, requests } = scriptedModel([
      {
        toolCalls: [
          { id: "a", name: "slowA", arguments: {} },
          { id: "b", name: "slowB", arguments: {} },
        ],
      },
      { text: "both done" },
    ]);
    const log: string[] = [];
    const gateA = deferred();
    const gateB = deferred();
    const slowA = fakeTool("slowA", async () => {
      log.push("start A");
      await gateA.promise;
      log.push("end A");
      return { content: "result A" };
    });
    const slowB = fakeTool("slowB", async () => {
      log.push("start B");
      await gateB.promise;
      log.push("end B");
      return { content: "result B" };
    });

    const run = start(input(), makePorts(provider, [slowA, slowB]));
    await until(() => log.length === 2, "both parallel tools started");
    expect(log).toEqual(["start A", "start B"]);

    // the second one finishes first
    gateB.resolve();
    await until(() => log.includes("end B"), "B finished");
    gateA.resolve();
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("stop");
    expect(log).toEqual(["start A", "start B", "end B", "end A"]);
    // the tool_end events stream as tools finish ...
    const ends = run.events.filter((e) => e.type === "tool_end").map((e) => (e as { toolCallId: string }).toolCallId);
    expect(ends).toEqual(["b", "a"]);
    // ... but the results go back to the model in the order it asked for them
    expect(toolResultsOf(run.events).map((r) => r.toolCallId)).toEqual(["a", "b"]);
    expect(requests[1].filter((m) => m.role === "toolResult").map((m) => (m as ToolResultMessage).content)).toEqual([
      "result A",
      "result B",
    ]);
  });

  it("runs a sequential tool alone: after the parallel calls before it, before the parallel calls after it", async () => {
    const { provider } = scriptedModel([
      {
        toolCalls: [
          { id: "p1", name: "readA", arguments: {} },
          { id: "s", name: "write", arguments: {} },
          { id: "p2", name: "readB", arguments: {} },
        ],
      },
      { text: "ok" },
    ]);
    const running = new Set<string>();
    const started: string[] = [];
    const gates = { readA: deferred(), write: deferred(), readB: deferred() };
    const gated = (name: keyof typeof gates, concurrency: Tool["concurrency"]) =>
      fakeTool(
        name,
        async () => {
          started.push(name);
          running.add(name);
          await gates[name].promise;
          running.delete(name);
          return { content: `${name} ok` };
        },
        concurrency,
      );

    const run = start(
      input(),
      makePorts(provider, [gated("readA", "parallel"), gated("write", "sequential"), gated("readB", "parallel")]),
    );
    await until(() => started.includes("readA"), "readA started");
    await settle();
    expect(started).toEqual(["readA"]); // the sequential tool waits for the parallel one before it

    gates.readA.resolve();
    await until(() => started.includes("write"), "write started");
    await settle();
    expect([...running]).toEqual(["write"]); // alone: nothing before it still running, nothing after it started
    expect(started).toEqual(["readA", "write"]);

    gates.write.resolve();
    await until(() => started.includes("readB"), "readB started");
    gates.readB.resolve();

    const outcome = await run.done;
    expect(outcome.stopReason).toBe("stop");
    expect(toolResultsOf(run.events).map((r) => r.toolCallId)).toEqual(["p1", "s", "p2"]);
  });

  it("turns a throwing tool into an error result and lets the model carry on", async () => {
    const { provider, requests } = scriptedModel([
      { toolCalls: [{ id: "c1", name: "exec", arguments: { command: "make" } }] },
      { text: "The build failed, sorry." },
    ]);
    const exec = fakeTool("exec", async () => {
      throw new Error("make: *** No rule to make target");
    });

    const run = start(input(), makePorts(provider, [exec]));
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("stop");
    expect(outcome.finalText).toBe("The build failed, sorry.");
    expect(toolResultsOf(run.events)).toEqual([
      expect.objectContaining({ toolCallId: "c1", isError: true, content: "make: *** No rule to make target" }),
    ]);
    expect(outcome.toolErrors).toEqual([{ name: "exec", message: "make: *** No rule to make target" }]);
    expect(requests[1].at(-1)).toMatchObject({ role: "toolResult", isError: true });
  });

  it("answers a call to an unknown tool with an error result naming it, and the run goes on", async () => {
    const { provider } = scriptedModel([
      { toolCalls: [{ id: "c1", name: "teleport", arguments: {} }] },
      { text: "I cannot teleport." },
    ]);
    const run = start(input(), makePorts(provider, []));
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("stop");
    const [result] = toolResultsOf(run.events);
    expect(result).toMatchObject({ toolCallId: "c1", toolName: "teleport", isError: true });
    expect(result.content).toContain('unknown tool "teleport"');
    expect(outcome.finalText).toBe("I cannot teleport.");
  });

  it("stops with stopReason max_steps when the model keeps calling tools past maxSteps", async () => {
    const provider = new ScriptedProvider("fake", {
      turns: [{ toolCalls: [{ name: "ping", arguments: {} }] }],
      whenDone: "cycle",
    });
    let pings = 0;
    const ping = fakeTool("ping", async () => {
      pings++;
      return { content: "pong" };
    });

    const run = start(input({ maxSteps: 3 }), makePorts(provider, [ping]));
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("max_steps");
    expect(outcome.steps).toBe(3);
    expect(provider.callCount).toBe(3);
    expect(pings).toBe(3);
    expectEveryCallAnsweredOnce(messagesOf(run.events));
  });

  it("reports stopReason length when the model's answer was cut off", async () => {
    const { provider } = scriptedModel([{ text: "This answer is trunc", stopReason: "length" }]);
    const outcome = await start(input(), makePorts(provider, [])).done;
    expect(outcome.stopReason).toBe("length");
    expect(outcome.finalText).toBe("This answer is trunc");
  });
});

describe("runAgentLoop: aborts", () => {
  it("aborted mid-stream: keeps the text streamed so far, drops the half-formed tool call, stopReason aborted", async () => {
    const { provider } = scriptedModel([
      {
        text: ["Let me ", "run that ", "for you."],
        toolCalls: [{ id: "c1", name: "exec", arguments: { command: "rm -rf build" } }],
        chunkDelayMs: 60_000, // never elapses: the abort ends the wait at once
      },
    ]);
    let executed = false;
    const exec = fakeTool("exec", async () => {
      executed = true;
      return { content: "done" };
    });
    const controller = new AbortController();

    const run = start(input(), makePorts(provider, [exec], { signal: controller.signal }), (ev) => {
      if (ev.type === "text_delta") controller.abort(new Error("user pressed stop"));
    });
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("aborted");
    expect(executed).toBe(false);
    const assistants = assistantsOf(run.events);
    expect(assistants).toHaveLength(1);
    expect(assistants[0].stopReason).toBe("aborted");
    expect(assistants[0].content).toEqual([{ type: "text", text: "Let me " }]);
    expect(outcome.finalText).toBe("Let me ");
    expect(toolResultsOf(run.events)).toEqual([]);
    expectEveryCallAnsweredOnce(messagesOf(run.events));
  });

  it("aborted mid-stream even when the model sends its chunks without any delay", async () => {
    const { provider } = scriptedModel([{ text: ["one ", "two ", "three"], toolCalls: [{ name: "exec" }] }]);
    const controller = new AbortController();
    const run = start(input(), makePorts(provider, [], { signal: controller.signal }), (ev) => {
      if (ev.type === "text_delta") controller.abort();
    });
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("aborted");
    expect(run.events.filter((e) => e.type === "text_delta")).toHaveLength(1);
    expect(assistantsOf(run.events)[0].content).toEqual([{ type: "text", text: "one " }]);
  });

  it("aborted mid-tool: the running tool and every call not yet started get exactly one result each", async () => {
    const { provider } = scriptedModel([
      {
        text: "Working on it.",
        toolCalls: [
          { id: "r1", name: "fetchA", arguments: {} },
          { id: "r2", name: "fetchB", arguments: {} },
          { id: "w1", name: "deploy", arguments: {} },
          { id: "w2", name: "notify", arguments: {} },
        ],
      },
      { text: "should never be asked" },
    ]);
    const controller = new AbortController();
    const started: string[] = [];
    // tools that honour the signal, like exec does
    const untilAborted = (name: string, concurrency: Tool["concurrency"]) =>
      fakeTool(
        name,
        (_args, ctx) =>
          new Promise<ToolOutput>((_resolve, reject) => {
            started.push(name);
            ctx.signal.addEventListener("abort", () => reject(new Error(`${name} cancelled`)), { once: true });
          }),
        concurrency,
      );
    const tools = [
      untilAborted("fetchA", "parallel"),
      untilAborted("fetchB", "parallel"),
      untilAborted("deploy", "sequential"),
      untilAborted("notify", "sequential"),
    ];

    const run = start(input(), makePorts(provider, tools, { signal: controller.signal }));
    await until(() => started.length === 2, "both parallel fetches started");
    controller.abort(new Error("user pressed stop"));
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("aborted");
    expect(provider.callCount).toBe(1);
    expect(started).toEqual(["fetchA", "fetchB"]); // nothing new starts after the abort
    const messages = messagesOf(run.events);
    expectEveryCallAnsweredOnce(messages);
    const results = toolResultsOf(run.events);
    expect(results.map((r) => r.toolCallId)).toEqual(["r1", "r2", "w1", "w2"]);
    expect(results.every((r) => r.isError)).toBe(true);
    expect(results[0].content).toBe("fetchA cancelled");
    expect(results[2].content).toContain("aborted");
    expect(results[2].content).toContain("user pressed stop");
    const skipped = run.events.filter((e) => e.type === "tool_end" && e.skipped === "aborted");
    expect(skipped.map((e) => (e as { toolCallId: string }).toolCallId)).toEqual(["w1", "w2"]);
  });

  it("does not call the model at all when the signal is already aborted", async () => {
    const { provider } = scriptedModel([{ text: "hi" }]);
    const controller = new AbortController();
    controller.abort();
    const run = start(input(), makePorts(provider, [], { signal: controller.signal }));
    const outcome = await run.done;
    expect(outcome.stopReason).toBe("aborted");
    expect(provider.callCount).toBe(0);
    expect(run.events).toEqual([]);
  });
});

describe("runAgentLoop: steering", () => {
  it("skips the calls not yet started when a user message arrives, and shows that message to the model next", async () => {
    const { provider, requests } = scriptedModel([
      {
        toolCalls: [
          { id: "s1", name: "step1", arguments: {} },
          { id: "s2", name: "step2", arguments: {} },
        ],
      },
      { text: "Switching to: {{lastUserMessage}}" },
    ]);
    const inbox: UserMessage[] = [];
    const steering: SteeringPort = {
      pending: () => inbox.length > 0,
      take: () => inbox.splice(0),
    };
    const ran: string[] = [];
    const step1 = fakeTool(
      "step1",
      async () => {
        ran.push("step1");
        inbox.push(userSays("actually, stop and list files instead"));
        return { content: "step1 done" };
      },
      "sequential",
    );
    const step2 = fakeTool(
      "step2",
      async () => {
        ran.push("step2");
        return { content: "step2 done" };
      },
      "sequential",
    );

    const run = start(input(), makePorts(provider, [step1, step2], { steering }));
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("stop");
    expect(ran).toEqual(["step1"]); // the running tool finished, the next one never ran
    const results = toolResultsOf(run.events);
    expect(results.map((r) => [r.toolCallId, r.content])).toEqual([
      ["s1", "step1 done"],
      ["s2", SKIPPED_FOR_STEER],
    ]);
    expect(SKIPPED_FOR_STEER).toBe("skipped: a new user message arrived");
    expect(run.events).toContainEqual(
      expect.objectContaining({ type: "tool_end", toolCallId: "s2", skipped: "steer", isError: true }),
    );
    expect(run.events).toContainEqual({
      type: "steered",
      messages: [userSays("actually, stop and list files instead")],
    });

    // the next model request holds both results and then the steered message
    expect(requests[1].map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult", "user"]);
    expect(requests[1].at(-1)).toEqual(userSays("actually, stop and list files instead"));
    expect(outcome.finalText).toBe("Switching to: actually, stop and list files instead");
    // the steered message is part of this run's transcript, after the results
    expect(messagesOf(run.events).map((m) => m.role)).toEqual([
      "assistant",
      "toolResult",
      "toolResult",
      "user",
      "assistant",
    ]);
  });
});

describe("runAgentLoop: beforeToolCall", () => {
  it("a blocked call never runs; the model gets the block reason as an error result", async () => {
    const { provider, requests } = scriptedModel([
      { toolCalls: [{ id: "c1", name: "exec", arguments: { command: "rm -rf /" } }] },
      { text: "I was not allowed to do that." },
    ]);
    let executed = false;
    const exec = fakeTool("exec", async () => {
      executed = true;
      return { content: "gone" };
    });

    const run = start(
      input(),
      makePorts(provider, [exec], {
        beforeToolCall: (call) =>
          String(call.arguments.command).includes("rm -rf")
            ? { block: true, blockReason: "destructive command" }
            : undefined,
      }),
    );
    const outcome = await run.done;

    expect(executed).toBe(false);
    expect(outcome.stopReason).toBe("stop");
    expect(toolResultsOf(run.events)).toEqual([
      expect.objectContaining({ toolCallId: "c1", isError: true, content: "blocked: destructive command" }),
    ]);
    expect(run.events).toContainEqual(
      expect.objectContaining({ type: "tool_end", toolCallId: "c1", skipped: "blocked" }),
    );
    expect(requests[1].at(-1)).toMatchObject({ role: "toolResult", content: "blocked: destructive command" });
  });

  it("replacement params from beforeToolCall are what the tool runs with", async () => {
    const { provider } = scriptedModel([
      { toolCalls: [{ id: "c1", name: "exec", arguments: { command: "ls", timeout: 9999 } }] },
      { text: "ok" },
    ]);
    const seen: unknown[] = [];
    const exec = fakeTool("exec", async (args) => {
      seen.push(args);
      return { content: "listing" };
    });

    const outcome = await start(
      input(),
      makePorts(provider, [exec], {
        beforeToolCall: (call) => ({ params: { ...call.arguments, timeout: 30 } }),
      }),
    ).done;

    expect(outcome.stopReason).toBe("stop");
    expect(seen).toEqual([{ command: "ls", timeout: 30 }]);
  });

  it("block: false changes nothing: the tool runs with the model's arguments", async () => {
    const { provider } = scriptedModel([
      { toolCalls: [{ id: "c1", name: "exec", arguments: { command: "ls" } }] },
      { text: "ok" },
    ]);
    const seen: unknown[] = [];
    const exec = fakeTool("exec", async (args) => {
      seen.push(args);
      return { content: "listing" };
    });
    const run = start(input(), makePorts(provider, [exec], { beforeToolCall: () => ({ block: false }) }));
    await run.done;
    expect(seen).toEqual([{ command: "ls" }]);
    expect(toolResultsOf(run.events)[0]).toMatchObject({ isError: false, content: "listing" });
  });
});

describe("runAgentLoop: provider errors", () => {
  it("a consumer that stops reading mid-reply closes the model's stream; each delta carried the text so far", async () => {
    let closed = false;
    const provider: LoopPorts["provider"] = {
      id: "fake",
      api: "openai-completions",
      async *stream() {
        try {
          yield { type: "text_delta", delta: "Hel" };
          yield { type: "text_delta", delta: "lo" };
          yield { type: "text_delta", delta: " never read" };
        } finally {
          closed = true;
        }
      },
    };
    const gen = runAgentLoop(input(), makePorts(provider, []));
    const seen: LoopEvent[] = [];
    for await (const ev of gen) {
      seen.push(ev);
      if (ev.type === "text_delta" && ev.delta === "lo") break;
    }
    expect(seen).toEqual([
      { type: "model_start", step: 1 },
      { type: "text_delta", delta: "Hel", text: "Hel" },
      { type: "text_delta", delta: "lo", text: "Hello" },
    ]);
    expect(closed).toBe(true);
  });

  it("a failing model call ends the run with stopReason error, the error, and the partial text kept", async () => {
    const { provider } = scriptedModel([
      {
        text: ["Here is the first part, ", "and then"],
        toolCalls: [{ name: "exec", arguments: {} }],
        error: { kind: "server", message: "upstream overloaded", status: 503, afterChunks: 1 },
      },
    ]);

    const run = start(input(), makePorts(provider, []));
    const outcome = await run.done;

    expect(outcome.stopReason).toBe("error");
    expect(outcome.error).toBeInstanceOf(ProviderError);
    expect((outcome.error as ProviderError).kind).toBe("server");
    expect(outcome.error?.message).toContain("upstream overloaded");
    expect(outcome.finalText).toBe("Here is the first part, ");
    const [assistant] = assistantsOf(run.events);
    expect(assistant).toMatchObject({
      stopReason: "error",
      content: [{ type: "text", text: "Here is the first part, " }],
    });
    expect(run.events).toContainEqual(expect.objectContaining({ type: "model_end", stopReason: "error" }));
  });

  it("an error after a tool turn still leaves every tool call answered", async () => {
    const { provider } = scriptedModel([
      { toolCalls: [{ id: "c1", name: "lookup", arguments: {} }] },
      { error: { kind: "rate_limit", message: "slow down", status: 429 } },
    ]);
    const lookup = fakeTool("lookup", async () => ({ content: "found" }));
    const run = start(input(), makePorts(provider, [lookup]));
    const outcome = await run.done;
    expect(outcome.stopReason).toBe("error");
    expect((outcome.error as ProviderError).kind).toBe("rate_limit");
    expectEveryCallAnsweredOnce(messagesOf(run.events));
  });
});

describe("context port and cut-off tool calls", () => {
  it("asks transformContext before every model call and sends what it returns", async () => {
    const { provider, requests } = scriptedModel([{ toolCalls: [{ name: "noop", arguments: {} }] }, { text: "done" }]);
    const seen: Array<{ step: number; count: number; previousInput?: number }> = [];
    const noop = fakeTool("noop", async () => ({ content: "ok" }));
    const run = start(
      input(),
      makePorts(provider, [noop], {
        transformContext: (messages, info) => {
          seen.push({ step: info.step, count: messages.length, previousInput: info.previous?.usage.input });
          // replace the context with a marker + the newest message: the model must see exactly this
          return [userSays(`[context of step ${info.step}]`), messages[messages.length - 1]];
        },
      }),
    );
    const outcome = await run.done;
    expect(outcome.stopReason).toBe("stop");
    expect(seen.map((s) => s.step)).toEqual([1, 2]);
    expect(seen[1].previousInput).toBeTypeOf("number");
    expect(requests[0][0]).toEqual(userSays("[context of step 1]"));
    expect(requests[1][0]).toEqual(userSays("[context of step 2]"));
    expect(requests[1]).toHaveLength(2);
    expect(outcome.messages.at(-1)).toMatchObject({ role: "assistant" });
  });

  it("ends the loop with the error transformContext throws, without calling the model", async () => {
    const { provider, requests } = scriptedModel([{ text: "never" }]);
    const run = start(
      input(),
      makePorts(provider, [], {
        transformContext: () => {
          throw new Error("context too long even after compaction");
        },
      }),
    );
    const outcome = await run.done;
    expect(outcome.stopReason).toBe("error");
    expect(outcome.error?.message).toMatch(/even after compaction/);
    expect(requests).toHaveLength(0);
  });

  it("answers a tool call cut off by the output limit with an error result and lets the model re-issue it", async () => {
    let calls = 0;
    const executed: Array<Record<string, unknown>> = [];
    const write = fakeTool("write", async (args) => {
      executed.push(args);
      return { content: "written" };
    });
    const provider: LoopPorts["provider"] = {
      id: "fake",
      api: "scripted",
      async *stream() {
        calls++;
        if (calls === 1) {
          yield {
            type: "tool_call",
            id: "c1",
            name: "write",
            arguments: {},
            invalid: 'tool call "write" was not run: cut off',
          };
          yield {
            type: "done",
            stopReason: "length",
            usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
          };
        } else if (calls === 2) {
          yield { type: "tool_call", id: "c2", name: "write", arguments: { path: "a.txt" } };
          yield {
            type: "done",
            stopReason: "tool_calls",
            usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
          };
        } else {
          yield { type: "text_delta", delta: "ok" };
          yield {
            type: "done",
            stopReason: "stop",
            usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
          };
        }
      },
    };
    const run = start(input(), makePorts(provider, [write]));
    const outcome = await run.done;
    expect(outcome.stopReason).toBe("stop");
    expect(executed).toEqual([{ path: "a.txt" }]);
    const results = messagesOf(run.events).filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(results[0]).toMatchObject({ toolCallId: "c1", isError: true });
    expect(results[0].content).toMatch(/was not run: cut off.*Issue the call again/);
    expect(results[1]).toMatchObject({ toolCallId: "c2", isError: false, content: "written" });
  });
});
