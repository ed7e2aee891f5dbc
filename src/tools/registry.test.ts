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

  it("rejects a duplicate name, naming the tool", () => {
    const registry = new ToolRegistry([fakeTool("search")]);
    expect(() => registry.register(fakeTool("search"))).toThrow('tool "search" is already registered');
  });

  it("rejects a name providers would refuse", () => {
    expect(() => new ToolRegistry([fakeTool("web search")])).toThrow(/tool name "web search" is invalid/);
  });

  it("looks tools up by name", () => {
    const registry = new ToolRegistry([fakeTool("a")]);
    expect(registry.get("a")?.name).toBe("a");
    expect(registry.get("b")).toBeUndefined();
    expect(registry.list()).toHaveLength(1);
  });
});
