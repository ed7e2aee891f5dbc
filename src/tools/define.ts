import { z } from "zod";
import type { JsonSchema } from "../providers/types.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";

/** A tool whose arguments are stated once, as a zod object: the model's schema and the call check both come from it. */
export interface ToolDefinition<Args extends z.ZodObject> {
  name: string;
  description: string;
  /**
   * The zod object, or a function building it. A function is called on the tool's first call, not when the tool is
   * made: building the built-ins' schemas and their JSON cost a one-shot CLI turn ~10 ms of its start (issue 34).
   */
  args: Args | (() => Args);
  /**
   * `modelSchema` of `args`, written out, so that making the tool builds no zod schema (the built-ins; their test
   * holds each equal to `modelSchema` of its zod object). Absent: derived from `args` now.
   */
  parameters?: JsonSchema;
  concurrency: Tool["concurrency"];
  /** gets the parsed arguments: the loop validated the call against `args` before (tools/validate.ts) */
  execute(args: z.output<Args>, ctx: ToolContext): Promise<ToolOutput>;
}

export function defineTool<Args extends z.ZodObject>(def: ToolDefinition<Args>): Tool {
  const args = def.args;
  let built: Args | undefined;
  const argsSchema = typeof args === "function" ? () => (built ??= args()) : args;
  return {
    name: def.name,
    description: def.description,
    parameters: def.parameters ?? modelSchema(typeof args === "function" ? args() : args),
    argsSchema,
    concurrency: def.concurrency,
    execute: (input, ctx) => def.execute(input as z.output<Args>, ctx),
  };
}

/**
 * The JSON Schema the providers get for a zod object, in the shape they were sent before zod stated it: no
 * `$schema` line, and none of the ±2^53 bounds zod writes for every integer (noise in every request, and a bound no
 * model needs to be told).
 */
export function modelSchema(args: z.ZodObject): JsonSchema {
  const json: JsonSchema = z.toJSONSchema(args, {
    io: "input",
    unrepresentable: "throw",
    override: ({ jsonSchema }) => {
      if (jsonSchema.type !== "integer") return;
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
    },
  });
  delete json.$schema;
  return json;
}
