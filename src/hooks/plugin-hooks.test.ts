import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { HookLogger } from "./logger.js";
import { PluginHookRunner } from "./plugin-hooks.js";

function recordingLogger() {
  const lines: Array<{ level: "info" | "warn" | "error"; message: string }> = [];
  const logger: HookLogger = {
    info: (message) => lines.push({ level: "info", message }),
    warn: (message) => lines.push({ level: "warn", message }),
    error: (message) => lines.push({ level: "error", message }),
  };
  const at = (level: "info" | "warn" | "error") => lines.filter((l) => l.level === level).map((l) => l.message);
  return { logger, lines, at };
}

function setup() {
  const log = recordingLogger();
  return { ...log, runner: new PluginHookRunner({ logger: log.logger }) };
}

/** A promise the test settles by hand, to observe what runs while another handler is still pending. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("has()", () => {
  it("reports no listeners until a plugin registers, and again after it unregisters", () => {
    const { runner } = setup();
    expect(runner.has("before_tool_call")).toBe(false);
    const off = runner.on("before_tool_call", () => undefined, { pluginId: "p" });
    expect(runner.has("before_tool_call")).toBe(true);
    off();
    expect(runner.has("before_tool_call")).toBe(false);
  });

  it("counts a legacy before_agent_start handler as a listener of both phases it runs in", () => {
    const { runner } = setup();
    runner.on("before_agent_start", () => undefined, { pluginId: "legacy" });
    expect(runner.has("before_model_resolve")).toBe(true);
    expect(runner.has("before_prompt_build")).toBe(true);
    expect(runner.has("before_agent_reply")).toBe(false);
  });

  it("with no plugins, decisions pass the input through untouched", async () => {
    const { runner } = setup();
    const params = { path: "a.txt" };
    expect(await runner.runBeforeToolCall({ toolName: "read", params })).toEqual({ params, block: false });
    expect(await runner.runMessageSending({ content: "hi" })).toEqual({ content: "hi", cancel: false });
    expect(await runner.runBeforeAgentReply({ prompt: "hi" })).toBeUndefined();
    expect(runner.runToolResultPersist({ message: "raw" })).toBe("raw");
  });
});

describe("before_model_resolve", () => {
  it("takes each override from the highest-priority plugin that defines it", async () => {
    const { runner } = setup();
    runner.on("before_model_resolve", () => ({ modelOverride: "low-model", providerOverride: "low-provider" }), {
      pluginId: "low",
      priority: 1,
    });
    runner.on("before_model_resolve", () => ({ providerOverride: "high-provider" }), {
      pluginId: "high",
      priority: 10,
    });
    runner.on("before_model_resolve", () => ({ modelOverride: "mid-model" }), { pluginId: "mid", priority: 5 });

    expect(await runner.runBeforeModelResolve({ prompt: "hello" })).toEqual({
      modelOverride: "mid-model",
      providerOverride: "high-provider",
    });
  });
});

describe("before_prompt_build", () => {
  it("keeps the highest-priority systemPrompt and joins contexts in priority order", async () => {
    const { runner } = setup();
    runner.on("before_prompt_build", () => ({ systemPrompt: "LOW", appendSystemContext: "low-append" }), {
      pluginId: "low",
      priority: -5,
    });
    runner.on(
      "before_prompt_build",
      () => ({ systemPrompt: "HIGH", prependContext: "high-ctx", prependSystemContext: "high-sys" }),
      { pluginId: "high", priority: 20 },
    );
    runner.on("before_prompt_build", () => ({ prependContext: "mid-ctx", appendSystemContext: "mid-append" }), {
      pluginId: "mid",
    });

    const result = await runner.runBeforePromptBuild({ prompt: "hi", messages: [] });

    expect(result).toEqual({
      systemPrompt: "HIGH",
      prependContext: "high-ctx\n\nmid-ctx",
      prependSystemContext: "high-sys",
      appendSystemContext: "mid-append\n\nlow-append",
    });
  });

  it("runs equal priorities in registration order", async () => {
    const { runner } = setup();
    for (const name of ["a", "b", "c"]) {
      runner.on("before_prompt_build", () => ({ prependContext: name }), { pluginId: name, priority: 3 });
    }
    expect((await runner.runBeforePromptBuild({ prompt: "", messages: [] })).prependContext).toBe("a\n\nb\n\nc");
  });

  it("runs a legacy before_agent_start handler in both phases, ordered by priority with the new hooks", async () => {
    const { runner } = setup();
    const phases: string[] = [];
    runner.on(
      "before_agent_start",
      (event) => {
        phases.push(event.messages ? "prompt-build" : "model-resolve");
        return { modelOverride: "legacy-model", prependContext: "legacy-ctx" };
      },
      { pluginId: "legacy", priority: 1 },
    );
    runner.on("before_prompt_build", () => ({ prependContext: "new-ctx" }), { pluginId: "modern", priority: 2 });

    const model = await runner.runBeforeModelResolve({ prompt: "hi" });
    const prompt = await runner.runBeforePromptBuild({ prompt: "hi", messages: [{ role: "user" }] });

    expect(phases).toEqual(["model-resolve", "prompt-build"]);
    expect(model).toEqual({ modelOverride: "legacy-model" });
    expect(prompt.prependContext).toBe("new-ctx\n\nlegacy-ctx");
  });
});

describe("before_agent_reply", () => {
  it("the first plugin to claim the turn answers it and lower priorities are not asked", async () => {
    const { runner } = setup();
    const lowest = vi.fn(() => ({ handled: true, reply: "lowest" }));
    runner.on("before_agent_reply", () => ({ handled: false, reply: "ignored" }), { pluginId: "shy", priority: 9 });
    runner.on("before_agent_reply", () => ({ handled: true, reply: "canned answer" }), {
      pluginId: "faq",
      priority: 5,
    });
    runner.on("before_agent_reply", lowest, { pluginId: "lowest", priority: 1 });

    expect(await runner.runBeforeAgentReply({ prompt: "opening hours?" })).toEqual({
      handled: true,
      reply: "canned answer",
      pluginId: "faq",
    });
    expect(lowest).not.toHaveBeenCalled();
  });

  it("a claim without a reply silences the turn", async () => {
    const { runner } = setup();
    runner.on("before_agent_reply", () => ({ handled: true }), { pluginId: "mute" });
    expect(await runner.runBeforeAgentReply({ prompt: "spam" })).toEqual({ handled: true, pluginId: "mute" });
  });
});

describe("before_tool_call", () => {
  it("a block stops lower-priority plugins from running and the tool from being called", async () => {
    const { runner } = setup();
    const lower = vi.fn(() => ({ params: { command: "ls" } }));
    runner.on("before_tool_call", lower, { pluginId: "rewriter", priority: 1 });
    runner.on("before_tool_call", () => ({ block: true, blockReason: "rm -rf is not allowed" }), {
      pluginId: "guard",
      priority: 100,
    });

    const decision = await runner.runBeforeToolCall({ toolName: "exec", params: { command: "rm -rf /" } });

    expect(decision).toMatchObject({ block: true, blockReason: "rm -rf is not allowed", blockedBy: "guard" });
    expect(lower).not.toHaveBeenCalled();
  });

  it("block:false neither blocks nor stops a lower-priority plugin from blocking", async () => {
    const { runner } = setup();
    runner.on("before_tool_call", () => ({ block: false }), { pluginId: "permissive", priority: 10 });
    runner.on("before_tool_call", () => ({ block: true, blockReason: "quota" }), { pluginId: "quota", priority: 1 });
    runner.on("before_tool_call", () => ({ block: false }), { pluginId: "after", priority: 0 });

    const decision = await runner.runBeforeToolCall({ toolName: "exec", params: {} });

    expect(decision).toMatchObject({ block: true, blockReason: "quota", blockedBy: "quota" });
  });

  it("replaced params are what later plugins and the tool receive", async () => {
    const { runner } = setup();
    const seenByLower: unknown[] = [];
    runner.on("before_tool_call", (e) => ({ params: { ...e.params, cwd: "/sandbox" } }), {
      pluginId: "sandbox",
      priority: 5,
    });
    runner.on(
      "before_tool_call",
      (e) => {
        seenByLower.push(e.params);
        return { block: false };
      },
      { pluginId: "audit", priority: 1 },
    );

    const decision = await runner.runBeforeToolCall({ toolName: "exec", params: { command: "ls" } });

    expect(seenByLower).toEqual([{ command: "ls", cwd: "/sandbox" }]);
    expect(decision).toEqual({ params: { command: "ls", cwd: "/sandbox" }, block: false });
  });

  it("a throwing plugin is logged and skipped; it does not block the call", async () => {
    const { runner, at } = setup();
    runner.on(
      "before_tool_call",
      () => {
        throw new Error("policy file unreadable");
      },
      { pluginId: "broken-guard", priority: 5 },
    );
    runner.on("before_tool_call", async () => Promise.reject(new Error("async boom")), { pluginId: "async-broken" });
    runner.on("before_tool_call", () => ({ params: { command: "pwd" } }), { pluginId: "ok", priority: -1 });

    const decision = await runner.runBeforeToolCall({ toolName: "exec", params: { command: "ls" } });

    expect(decision).toEqual({ params: { command: "pwd" }, block: false });
    const errors = at("error");
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/"broken-guard".*before_tool_call.*policy file unreadable/);
    expect(errors[1]).toMatch(/"async-broken".*async boom/);
  });

  it("a non-object result is ignored with a warning naming the plugin", async () => {
    const { runner, at } = setup();
    runner.on("before_tool_call", (() => "block") as never, { pluginId: "confused" });
    const decision = await runner.runBeforeToolCall({ toolName: "exec", params: {} });
    expect(decision.block).toBe(false);
    expect(at("warn").join("\n")).toContain('"confused"');
  });
});

describe("before_install", () => {
  it("collects findings from every plugin that ran and stops at the first block", async () => {
    const { runner } = setup();
    const afterBlock = vi.fn(() => ({ findings: [{ message: "never reported" }] }));
    runner.on("before_install", () => ({ findings: [{ message: "uses child_process", severity: "warn" as const }] }), {
      pluginId: "scanner",
      priority: 10,
    });
    runner.on(
      "before_install",
      () => ({ block: true, blockReason: "curl | sh", findings: [{ message: "pipes a download into sh" }] }),
      { pluginId: "shell-check", priority: 5 },
    );
    runner.on("before_install", afterBlock, { pluginId: "late", priority: 1 });

    const decision = await runner.runBeforeInstall({
      kind: "skill",
      name: "weather",
      source: "/tmp/weather",
      sourceType: "dir",
      stagedPath: "/tmp/stage",
      mode: "install",
    });

    expect(decision.block).toBe(true);
    expect(decision.blockedBy).toBe("shell-check");
    expect(decision.findings).toEqual([
      { message: "uses child_process", severity: "warn", pluginId: "scanner" },
      { message: "pipes a download into sh", pluginId: "shell-check" },
    ]);
    expect(afterBlock).not.toHaveBeenCalled();
  });
});

describe("message_sending", () => {
  it("each plugin edits the text left by the one before it", async () => {
    const { runner } = setup();
    runner.on("message_sending", (e) => ({ content: e.content.toUpperCase() }), { pluginId: "shout", priority: 2 });
    runner.on("message_sending", (e) => ({ content: `${e.content}!` }), { pluginId: "bang", priority: 1 });
    expect(await runner.runMessageSending({ content: "hello" })).toEqual({ content: "HELLO!", cancel: false });
  });

  it("cancel:true is final and cancel:false changes nothing", async () => {
    const { runner } = setup();
    const lower = vi.fn(() => ({ content: "rewritten" }));
    runner.on("message_sending", () => ({ cancel: false }), { pluginId: "noop", priority: 3 });
    runner.on("message_sending", () => ({ cancel: true }), { pluginId: "dnd", priority: 2 });
    runner.on("message_sending", lower, { pluginId: "lower", priority: 1 });

    const decision = await runner.runMessageSending({ content: "ping", to: "+1555" });

    expect(decision).toEqual({ content: "ping", cancel: true, cancelledBy: "dnd" });
    expect(lower).not.toHaveBeenCalled();
  });
});

describe("tool_result_persist", () => {
  it("replaces the persisted message synchronously, each plugin seeing the previous replacement", () => {
    const { runner } = setup();
    runner.on("tool_result_persist", (e) => ({ message: `${String(e.message)} [redacted]` }), {
      pluginId: "redact",
      priority: 2,
    });
    runner.on("tool_result_persist", (e) => ({ message: String(e.message).slice(0, 12) }), {
      pluginId: "truncate",
      priority: 1,
    });

    const persisted = runner.runToolResultPersist({ message: "secret=abc", toolName: "exec" });

    expect(persisted).toBe("secret=abc [");
  });

  it("a handler that returns a Promise is ignored with a warning naming the plugin", async () => {
    const { runner, at } = setup();
    runner.on("tool_result_persist", (async () => ({ message: "from the promise" })) as never, { pluginId: "lazy" });
    runner.on("tool_result_persist", (async () => Promise.reject(new Error("late"))) as never, {
      pluginId: "lazy-reject",
    });

    const persisted = runner.runToolResultPersist({ message: "original" });
    await new Promise((r) => setImmediate(r));

    expect(persisted).toBe("original");
    const warnings = at("warn");
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('"lazy"');
    expect(warnings[0]).toContain("synchronous");
  });
});

describe("observers", () => {
  it("run in parallel: every observer starts before any finishes", async () => {
    const { runner } = setup();
    const events: string[] = [];
    const gateA = deferred();
    const gateB = deferred();
    runner.on(
      "agent_end",
      async () => {
        events.push("a:start");
        await gateA.promise;
        events.push("a:end");
      },
      { pluginId: "a", priority: 10 },
    );
    runner.on(
      "agent_end",
      async () => {
        events.push("b:start");
        await gateB.promise;
        events.push("b:end");
      },
      { pluginId: "b" },
    );

    const done = runner.runObservers("agent_end", { messages: [], success: true });
    await Promise.resolve();
    expect(events).toEqual(["a:start", "b:start"]);
    gateB.resolve();
    gateA.resolve();
    await done;
    expect(events).toEqual(["a:start", "b:start", "b:end", "a:end"]);
  });

  it("a throwing or rejecting observer is logged with its plugin id and the others still complete", async () => {
    const { runner, at } = setup();
    const healthy = vi.fn();
    runner.on(
      "session_start",
      () => {
        throw new Error("sync observer bug");
      },
      { pluginId: "metrics" },
    );
    runner.on("session_start", async () => Promise.reject(new Error("webhook 500")), { pluginId: "webhook" });
    runner.on("session_start", healthy, { pluginId: "healthy" });

    await expect(runner.runObservers("session_start", { sessionKey: "agent:main:main" })).resolves.toBeUndefined();

    expect(healthy).toHaveBeenCalledOnce();
    const errors = at("error").join("\n");
    expect(errors).toContain('"metrics"');
    expect(errors).toContain('"webhook"');
    expect(errors).toContain("webhook 500");
  });
});

describe("hook timeouts", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a modifying hook that overruns its timeout is skipped with a warning and the next one still runs", async () => {
    const { runner, at } = setup();
    const hang = deferred<{ block: boolean }>();
    runner.on("before_tool_call", () => hang.promise, { pluginId: "slow-scanner", priority: 5, timeoutMs: 250 });
    runner.on("before_tool_call", () => ({ params: { command: "ls -la" } }), { pluginId: "fast" });

    const pending = runner.runBeforeToolCall({ toolName: "exec", params: { command: "ls" } });
    await vi.advanceTimersByTimeAsync(250);
    const decision = await pending;

    expect(decision).toEqual({ params: { command: "ls -la" }, block: false });
    expect(at("warn")).toEqual(['plugin "slow-scanner" hook before_tool_call timed out after 250ms; skipped']);

    // Its late answer is dropped: the decision above already stands and nothing else is logged.
    hang.resolve({ block: true });
    await vi.advanceTimersByTimeAsync(0);
    expect(at("warn")).toHaveLength(1);
  });

  it("without a timeout of its own a hook gets 15 seconds", async () => {
    const { runner, at } = setup();
    runner.on("message_sending", () => new Promise<undefined>(() => {}), { pluginId: "stuck" });

    let settled = false;
    const pending = runner.runMessageSending({ content: "hi" }).then((d) => {
      settled = true;
      return d;
    });
    await vi.advanceTimersByTimeAsync(14_999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);

    expect(await pending).toEqual({ content: "hi", cancel: false });
    expect(at("warn")[0]).toContain('"stuck" hook message_sending timed out after 15000ms');
  });

  it("an observer that never finishes does not hold the caller past its timeout", async () => {
    const { runner, at } = setup();
    runner.on("gateway_stop", () => new Promise<undefined>(() => {}), { pluginId: "hung-exporter", timeoutMs: 1000 });

    const pending = runner.runObservers("gateway_stop", { reason: "SIGTERM" });
    await vi.advanceTimersByTimeAsync(1000);
    await pending;

    expect(at("warn")[0]).toContain('"hung-exporter" hook gateway_stop timed out');
  });
});
