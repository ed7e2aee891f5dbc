import { describe, expect, it } from "vitest";
import { parseConfig } from "../config/index.js";
import { createBuiltinTools } from "./builtin.js";
import { filterTools, filterToolsLayered, policyWarnings } from "./policy.js";
import type { Tool } from "./types.js";

function pluginTool(name: string, plugin = "web"): Tool {
  return {
    name,
    description: name,
    parameters: { type: "object" },
    concurrency: "parallel",
    source: `plugin "${plugin}"`,
    execute: async () => ({ content: "" }),
  };
}

const ALL = [...createBuiltinTools(), pluginTool("web_fetch"), pluginTool("web_search")];
const names = (tools: Tool[]) => tools.map((t) => t.name);

describe("tools.allow / tools.deny", () => {
  it("no lists keep every tool", () => {
    expect(names(filterTools(ALL, {}))).toEqual(names(ALL));
  });

  it("deny wins over allow, and a non-empty allow keeps only what it matches", () => {
    expect(names(filterTools(ALL, { allow: ["read", "exec", "web_*"], deny: ["exec"] }))).toEqual([
      "read",
      "web_fetch",
      "web_search",
    ]);
  });

  it("matches globs and names ignoring case, and bash means exec", () => {
    expect(names(filterTools(ALL, { deny: ["WEB_*", "Bash"] }))).toEqual(["read", "write", "edit", "message"]);
    expect(names(filterTools(ALL, { allow: ["*"] }))).toEqual(names(ALL));
  });

  it("expands the groups Loopgate has tools for", () => {
    expect(names(filterTools(ALL, { allow: ["group:fs"] }))).toEqual(["read", "write", "edit"]);
    expect(names(filterTools(ALL, { deny: ["group:runtime", "group:messaging"] }))).toEqual([
      "read",
      "write",
      "edit",
      "web_fetch",
      "web_search",
    ]);
    expect(names(filterTools(ALL, { allow: ["group:plugins"] }))).toEqual(["web_fetch", "web_search"]);
    expect(names(filterTools(ALL, { deny: ["group:openclaw"] }))).toEqual(["web_fetch", "web_search"]);
  });

  it("an allow list that matches no tool is ignored, with a warning naming the key", () => {
    const policy = { allow: ["lobster"] };
    expect(names(filterTools(ALL, policy))).toEqual(names(ALL));
    expect(policyWarnings(ALL, policy, "agents.list[0].tools")).toEqual([
      `agents.list[0].tools.allow (["lobster"]) matches none of the tools (${names(ALL).join(", ")}); it is ignored`,
    ]);
    expect(policyWarnings(ALL, { allow: ["read"] }, "tools")).toEqual([]);
  });

  it("an agent's lists apply after the default ones and cannot give back what the default took", () => {
    const kept = filterToolsLayered(ALL, [{ deny: ["exec"] }, { allow: ["exec", "read"] }]);
    expect(names(kept)).toEqual(["read"]);
  });

  it("the config refuses a group Loopgate has no tools for, and an unknown group, naming the key", () => {
    expect(() => parseConfig({ tools: { deny: ["group:ui"] } })).toThrow(
      "tools.deny[0]: group:ui is not supported: Loopgate has none of its tools (browser, canvas); supported groups: group:fs, group:runtime, group:messaging, group:openclaw, group:plugins",
    );
    expect(() => parseConfig({ agents: { list: [{ id: "a", tools: { allow: ["group:fss"] } }] } })).toThrow(
      "agents.list[0].tools.allow[0]: unknown tool group group:fss",
    );
  });
});
