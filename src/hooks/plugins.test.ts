import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ToolRegistry } from "../tools/registry.js";
import type { Tool } from "../tools/types.js";
import type { HookLogger } from "./logger.js";
import { PluginHookRunner } from "./plugin-hooks.js";
import { loadPlugins } from "./plugins.js";

const PLUGINS = resolve(import.meta.dirname, "../../test/fixtures/hooks/plugins");

function harness() {
  const lines: Array<{ level: string; message: string }> = [];
  const logger: HookLogger = {
    info: (message) => lines.push({ level: "info", message }),
    warn: (message) => lines.push({ level: "warn", message }),
    error: (message) => lines.push({ level: "error", message }),
  };
  const runner = new PluginHookRunner({ logger });
  const tools: Array<{ name: string; pluginId: string; tool: Tool }> = [];
  const registerTool = (tool: Tool, pluginId: string) => {
    tools.push({ name: tool.name, pluginId, tool });
    return undefined;
  };
  const at = (level: string) => lines.filter((l) => l.level === level).map((l) => l.message);
  return { logger, runner, tools, at, deps: { runner, registerTool, logger } };
}

const fixture = (name: string) => join(PLUGINS, name);

afterEach(() => {
  delete (globalThis as { __loopgateDisabledPluginImported?: boolean }).__loopgateDisabledPluginImported;
});

describe("loadPlugins", () => {
  it("a plugin's hooks and tools become active under the id it exports", async () => {
    const h = harness();
    const report = await loadPlugins({ paths: [fixture("policy-guard.mjs")] }, h.deps);

    expect(report).toEqual({ loaded: ["policy-guard"], disabled: [], failures: [] });
    expect(h.tools.map((t) => [t.name, t.pluginId])).toEqual([["echo", "policy-guard"]]);
    expect(
      await h.tools[0].tool.execute({ text: "hi" }, { workspaceDir: "/", signal: new AbortController().signal }),
    ).toEqual({
      content: "hi",
    });
    const decision = await h.runner.runBeforeToolCall({ toolName: "exec", params: { command: "ls" } });
    expect(decision).toMatchObject({ block: true, blockReason: "exec is not allowed here", blockedBy: "policy-guard" });
  });

  it("gives the plugin its own config and a logger prefixed with its id", async () => {
    const h = harness();
    await loadPlugins(
      { paths: [fixture("policy-guard.mjs")], entries: { "policy-guard": { config: { strict: true } } } },
      h.deps,
    );
    expect(h.at("info")).toContain('[plugin:policy-guard] ready with config {"strict":true}');
  });

  it("loads default-export plugins and directory plugins through package.json main", async () => {
    const h = harness();
    const report = await loadPlugins({ paths: [fixture("default-style.js"), fixture("dir-plugin")] }, h.deps);

    expect(report.loaded).toEqual(["signature", "dir-plugin"]);
    expect((await h.runner.runMessageSending({ content: "hi" })).content).toBe("hi\n-- sent by loopgate");
    expect((await h.runner.runBeforePromptBuild({ prompt: "", messages: [] })).appendSystemContext).toBe(
      "Answer in haiku.",
    );
  });

  it("resolves relative paths against baseDir", async () => {
    const h = harness();
    const report = await loadPlugins({ paths: ["dir-plugin"], baseDir: PLUGINS }, h.deps);
    expect(report.loaded).toEqual(["dir-plugin"]);
  });

  it("a plugin disabled in entries is never imported", async () => {
    const h = harness();
    const report = await loadPlugins(
      { paths: [fixture("disabled-plugin.mjs")], entries: { "disabled-plugin": { enabled: false } } },
      h.deps,
    );

    expect(report).toEqual({ loaded: [], disabled: ["disabled-plugin"], failures: [] });
    expect((globalThis as { __loopgateDisabledPluginImported?: boolean }).__loopgateDisabledPluginImported).toBe(
      undefined,
    );
    expect(h.runner.has("before_agent_reply")).toBe(false);
  });

  it("a plugin disabled under its exported id is imported but not registered", async () => {
    const h = harness();
    const report = await loadPlugins(
      { paths: [fixture("policy-guard.mjs")], entries: { "policy-guard": { enabled: false } } },
      h.deps,
    );
    expect(report.disabled).toEqual(["policy-guard"]);
    expect(h.tools).toEqual([]);
    expect(h.runner.has("before_tool_call")).toBe(false);
  });

  it("a plugin that throws in register or at import is reported by path, leaves nothing behind, and others load", async () => {
    const h = harness();
    const report = await loadPlugins(
      {
        paths: [
          fixture("throws-in-register.mjs"),
          fixture("throws-on-import.mjs"),
          fixture("no-register.mjs"),
          fixture("missing.mjs"),
          fixture("default-style.js"),
        ],
      },
      h.deps,
    );

    expect(report.loaded).toEqual(["signature"]);
    expect(report.failures.map((f) => f.path)).toEqual([
      fixture("throws-in-register.mjs"),
      fixture("throws-on-import.mjs"),
      fixture("no-register.mjs"),
      fixture("missing.mjs"),
    ]);
    const errors = h.at("error");
    expect(errors[0]).toContain(fixture("throws-in-register.mjs"));
    expect(errors[0]).toContain("missing API key");
    expect(errors[1]).toContain("boom at import time");
    // The half-registered plugin's hook and tool were rolled back.
    expect(h.runner.has("before_agent_reply")).toBe(false);
    expect(h.tools).toEqual([]);
  });

  it("an unknown hook name is a warning naming the plugin, and its valid hooks still register", async () => {
    const h = harness();
    const report = await loadPlugins({ paths: [fixture("typo-hook.mjs")] }, h.deps);

    expect(report.loaded).toEqual(["typo-hook"]);
    expect(h.at("warn")).toEqual(['plugin "typo-hook" registered unknown hook "before_tool_cal"; ignored']);
    expect(h.runner.has("session_start")).toBe(true);
  });

  it('a plugin tool named "web search" fails the plugin\'s load, naming the tool, and leaves none of its tools or hooks', async () => {
    const h = harness();
    const registry = new ToolRegistry();
    const deps = {
      ...h.deps,
      registerTool: (tool: Tool, pluginId: string) => registry.register({ ...tool, source: `plugin "${pluginId}"` }),
    };
    const report = await loadPlugins({ paths: [fixture("web-search.mjs"), fixture("policy-guard.mjs")] }, deps);

    expect(report.loaded).toEqual(["policy-guard"]);
    expect(report.failures).toEqual([
      {
        path: fixture("web-search.mjs"),
        id: "web-search",
        error: 'tool name "web search" from plugin "web-search" is invalid: use 1-64 letters, digits, "_" or "-"',
      },
    ]);
    expect(h.at("error")).toEqual([
      `plugin ${fixture("web-search.mjs")} failed to load: tool name "web search" from plugin "web-search" is invalid: use 1-64 letters, digits, "_" or "-"`,
    ]);
    expect(registry.list().map((t) => t.name)).toEqual(["echo"]);
    expect(h.runner.has("session_start")).toBe(false);
  });

  it("refuses a second plugin with an id that is already loaded", async () => {
    const h = harness();
    const report = await loadPlugins({ paths: [fixture("policy-guard.mjs"), fixture("policy-guard.mjs")] }, h.deps);
    expect(report.loaded).toEqual(["policy-guard"]);
    expect(report.failures[0].error).toContain('"policy-guard"');
    expect(h.tools).toHaveLength(1);
  });
});
