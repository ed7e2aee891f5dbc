import { describe, expect, it } from "vitest";
import { createBuiltinTools } from "./builtin.js";
import { ToolRegistry } from "./registry.js";
import type { Tool } from "./types.js";

function fakeTool(name: string): Tool {
  return {
    name,
    description: `${name} tool`,
    parameters: { type: "object", properties: {} },
    concurrency: "parallel",
    execute: async () => ({ content: name }),
  };
}

describe("ToolRegistry", () => {
  it("gives the model the built-in tools' specs in registration order", () => {
    const registry = new ToolRegistry(createBuiltinTools());
    expect(registry.specs().map((s) => s.name)).toEqual(["read", "write", "edit", "exec", "message"]);
    for (const spec of registry.specs()) {
      expect(Object.keys(spec).sort()).toEqual(["description", "name", "parameters"]);
      expect(spec.parameters.type).toBe("object");
    }
  });

  it("marks only read-only built-ins as parallel", () => {
    const byName = Object.fromEntries(createBuiltinTools().map((t) => [t.name, t.concurrency]));
    expect(byName).toEqual({
      read: "parallel",
      write: "sequential",
      edit: "sequential",
      exec: "sequential",
      message: "sequential",
    });
  });

  it("rejects a duplicate name, naming both tools' sources", () => {
    const registry = new ToolRegistry(createBuiltinTools());
    expect(() => registry.register({ ...fakeTool("read"), source: 'plugin "foo"' })).toThrow(
      'tool "read" from plugin "foo" clashes with the built-in tool "read"',
    );
    registry.register({ ...fakeTool("search"), source: 'plugin "a"' });
    expect(() => registry.register({ ...fakeTool("search"), source: 'plugin "b"' })).toThrow(
      'tool "search" from plugin "b" clashes with tool "search" from plugin "a"',
    );
  });

  it("rejects a name providers would refuse, naming where it came from", () => {
    expect(() => new ToolRegistry([{ ...fakeTool("web search"), source: 'plugin "web"' }])).toThrow(
      'tool name "web search" from plugin "web" is invalid: use 1-64 letters, digits, "_" or "-"',
    );
    expect(() => new ToolRegistry([fakeTool("x".repeat(65))])).toThrow(/is invalid/);
  });

  it("a removed tool's name can be registered again", () => {
    const registry = new ToolRegistry();
    const remove = registry.register(fakeTool("a"));
    remove();
    expect(registry.has("a")).toBe(false);
    registry.register(fakeTool("a"));
    expect(registry.list()).toHaveLength(1);
  });

  it("looks tools up by name", () => {
    const registry = new ToolRegistry([fakeTool("a")]);
    expect(registry.get("a")?.name).toBe("a");
    expect(registry.get("b")).toBeUndefined();
    expect(registry.list()).toHaveLength(1);
  });
});
