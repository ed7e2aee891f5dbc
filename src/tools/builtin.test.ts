import { expect, it } from "vitest";
import { createBuiltinTools } from "./builtin.js";
import { modelSchema } from "./define.js";
import type { Tool } from "./types.js";
import { checkToolArgs } from "./validate.js";

/** The zod object a built-in tool checks its calls with (built on first use). */
function zodOf(tool: Tool) {
  const schema = typeof tool.argsSchema === "function" ? tool.argsSchema() : tool.argsSchema;
  if (!schema) throw new Error(`${tool.name} has no zod schema`);
  return schema as Parameters<typeof modelSchema>[0];
}

// each built-in's JSON Schema is written out beside its zod object, so that making the tools builds neither zod nor
// its JSON; the model must still get exactly what zod would have said, byte for byte
it.each([
  ["default options", createBuiltinTools()],
  ["exec options", createBuiltinTools({ exec: { maxTimeoutSeconds: 60, defaultTimeoutSeconds: 7 } })],
])("built-in-tool-json-schemas-match-their-zod-schemas: %s", (_, tools) => {
  expect(tools.map((t) => t.name)).toEqual(["read", "write", "edit", "exec", "message"]);
  for (const tool of tools) {
    expect({ tool: tool.name, json: JSON.stringify(tool.parameters) }).toEqual({
      tool: tool.name,
      json: JSON.stringify(modelSchema(zodOf(tool))),
    });
  }
});

it("built-in-tool-schema-built-once: a built-in's zod schema is built on its first call and reused after", () => {
  const read = createBuiltinTools().find((t) => t.name === "read") as Tool;
  expect(typeof read.argsSchema).toBe("function");
  expect(zodOf(read)).toBe(zodOf(read));
  expect(checkToolArgs(read, { path: "a", offset: 0 })).toEqual({
    ok: false,
    error: "invalid arguments for read: offset: must be >= 1",
  });
  expect(checkToolArgs(read, { path: "a", limit: null })).toEqual({ ok: true, args: { path: "a" } });
});
