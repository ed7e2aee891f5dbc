import { expect, it } from "vitest";
import type { z } from "zod";
import { createBuiltinTools } from "./builtin.js";
import { modelSchema } from "./model-schema.js";
import type { Tool } from "./types.js";
import { checkToolArgs } from "./validate.js";

/** The zod object a built-in tool checks its calls with (loaded on first use). */
async function zodOf(tool: Tool): Promise<z.ZodObject> {
  const schema = typeof tool.argsSchema === "function" ? await tool.argsSchema() : tool.argsSchema;
  if (!schema) throw new Error(`${tool.name} has no zod schema`);
  return schema as unknown as z.ZodObject;
}

const withExecOptions = () => createBuiltinTools({ exec: { maxTimeoutSeconds: 60, defaultTimeoutSeconds: 7 } });

// each built-in's JSON Schema is written out beside its zod object, so that making the tools loads neither zod nor
// its JSON; the model must still get exactly what zod would have said, byte for byte
it.each([
  ["default options", createBuiltinTools()],
  ["exec options", withExecOptions()],
])("built-in-tool-json-schemas-match-their-zod-schemas: %s", async (_, tools) => {
  expect(tools.map((t) => t.name)).toEqual(["read", "write", "edit", "exec", "message"]);
  for (const tool of tools) {
    expect({ tool: tool.name, json: JSON.stringify(tool.parameters) }).toEqual({
      tool: tool.name,
      json: JSON.stringify(modelSchema(await zodOf(tool))),
    });
  }
});

/** Calls each built-in's JSON Schema accepts without zod, and calls it leaves to zod (valid or not). */
const calls: Record<string, unknown[]> = {
  read: [
    { path: "a" },
    { limit: 3, path: "a", offset: 2 },
    { path: "a", offset: null, limit: null },
    { path: "a", offset: 1.5 },
    { path: "a", offset: 0 },
    { path: "a", limit: 2 ** 53 },
    { path: null },
    { path: "a", extra: 1 },
    [],
    "path=a",
  ],
  write: [{ path: "a", content: "" }, { path: "a" }, { path: "a", content: 7 }],
  edit: [
    { path: "a", oldText: "x", newText: "" },
    { path: "a", oldText: "", newText: "x" },
  ],
  exec: [
    { command: "true" },
    { command: "true", timeoutSeconds: 0.5 },
    { command: "true", timeoutSeconds: 60 },
    { command: "true", timeoutSeconds: 61 },
    { command: "true", timeoutSeconds: 0 },
    { command: "", timeoutSeconds: null },
  ],
  message: [{ text: "hi" }, { text: null }, {}],
};

it("built-in-tool-calls-checked-as-zod-checks-them: a built-in's call check answers what its zod schema does, loaded or not", async () => {
  for (const tool of withExecOptions()) {
    // the check as it was before the schemas were loaded lazily: the zod object itself
    const eager = {
      ...tool,
      argsSchema: (await zodOf(withExecOptions().find((t) => t.name === tool.name) as Tool)) as Tool["argsSchema"],
    };
    for (const args of calls[tool.name] ?? []) {
      const expected = JSON.stringify(await checkToolArgs(eager, args));
      const lazy = withExecOptions().find((t) => t.name === tool.name) as Tool;
      expect({ tool: tool.name, args, got: JSON.stringify(await checkToolArgs(lazy, args)) }).toEqual({
        tool: tool.name,
        args,
        got: expected,
      });
      // and once loaded
      expect({ tool: tool.name, args, got: JSON.stringify(await checkToolArgs(lazy, args)) }).toEqual({
        tool: tool.name,
        args,
        got: expected,
      });
    }
  }
});

it("built-in-tool-schema-loaded-once: a built-in's zod schema is loaded by its first call that needs it, and reused", async () => {
  const read = createBuiltinTools().find((t) => t.name === "read") as Tool;
  expect(typeof read.argsSchema).toBe("function");
  // a plainly valid call is answered at once, without the schema
  expect(checkToolArgs(read, { path: "a" })).toEqual({ ok: true, args: { path: "a" } });
  const first = checkToolArgs(read, { path: "a", offset: 0 });
  expect(first).toBeInstanceOf(Promise);
  expect(await first).toEqual({ ok: false, error: "invalid arguments for read: offset: must be >= 1" });
  // loaded: the next refusal is answered at once
  expect(checkToolArgs(read, { path: "a", offset: 0 })).toEqual({
    ok: false,
    error: "invalid arguments for read: offset: must be >= 1",
  });
  expect(await zodOf(read)).toBe(await zodOf(read));
});
