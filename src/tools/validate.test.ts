import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "./define.js";
import { modelSchema } from "./model-schema.js";
import type { Tool } from "./types.js";
import { checkToolArgs, prepareToolValidation } from "./validate.js";

/** A tool the way a plugin declares one: a hand-written JSON Schema and nothing else. */
function jsonSchemaTool(parameters: Record<string, unknown>): Tool {
  return {
    name: "lookup",
    description: "Looks a word up.",
    parameters,
    concurrency: "parallel",
    execute: async () => ({ content: "ok" }),
  };
}

const lookupSchema = {
  type: "object",
  properties: {
    word: { type: "string", minLength: 1 },
    limit: { type: "integer", minimum: 1, maximum: 50 },
    filters: { type: "object", properties: { lang: { type: "string" } }, additionalProperties: false },
  },
  required: ["word"],
  additionalProperties: false,
};

describe("tool call validation", () => {
  it("a JSON-Schema-only tool's bad call names every wrong field", () => {
    const tool = jsonSchemaTool(lookupSchema);
    expect(checkToolArgs(tool, { word: 7, limit: 0, extra: true, filters: { lang: 3 } })).toEqual({
      ok: false,
      error:
        "invalid arguments for lookup: extra: unknown field; word: expected string, got number; limit: must be >= 1; filters.lang: expected string, got number",
    });
    expect(checkToolArgs(tool, {})).toEqual({ ok: false, error: "invalid arguments for lookup: word: is required" });
    expect(checkToolArgs(tool, { word: "hi", filters: { lang: "en" } })).toEqual({
      ok: true,
      args: { word: "hi", filters: { lang: "en" } },
    });
  });

  it("a JSON-Schema-only tool declaring draft 2020-12 is validated under that draft", () => {
    const tool = jsonSchemaTool({ $schema: "https://json-schema.org/draft/2020-12/schema", ...lookupSchema });
    expect(checkToolArgs(tool, { word: "" })).toEqual({
      ok: false,
      error: "invalid arguments for lookup: word: must NOT have fewer than 1 characters",
    });
  });

  it("a schema ajv cannot compile is refused when the tool is loaded, naming the tool", () => {
    const broken = jsonSchemaTool({ type: "object", properties: { word: { type: "strnig" } } });
    expect(() => prepareToolValidation(broken)).toThrow(
      /^tool "lookup" has a parameters schema that cannot be used: .*type/,
    );
  });

  it("a zod tool's execute gets the parsed arguments, and arguments that are not an object are refused", async () => {
    let seen: unknown;
    const args = z.strictObject({ n: z.int().min(0), label: z.string().optional() });
    const tool = defineTool({
      name: "count",
      description: "Counts.",
      args,
      parameters: modelSchema(args),
      concurrency: "parallel",
      execute: async (args) => {
        seen = args;
        return { content: String(args.n) };
      },
    });
    const check = await checkToolArgs(tool, { n: 3, label: null });
    expect(check).toEqual({ ok: true, args: { n: 3 } });
    if (check.ok) await tool.execute(check.args, { workspaceDir: "/", signal: new AbortController().signal });
    expect(seen).toEqual({ n: 3 });
    expect(checkToolArgs(tool, "n=3")).toEqual({
      ok: false,
      error: "invalid arguments for count: expected object, got string",
    });
    expect(checkToolArgs(tool, { n: null })).toEqual({
      ok: false,
      error: "invalid arguments for count: n: expected number, got null",
    });
  });

  it("the model is sent a zod tool's schema without $schema or integer-range noise", () => {
    expect(modelSchema(z.strictObject({ offset: z.int().min(1).optional().describe("1-based") }))).toEqual({
      type: "object",
      properties: { offset: { type: "integer", minimum: 1, description: "1-based" } },
      additionalProperties: false,
    });
  });
});
