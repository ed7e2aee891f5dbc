import { z } from "zod";
import type { JsonSchema } from "../providers/types.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";

/** A tool whose arguments are stated once, as a zod object: the model's schema and the call check both come from it. */
export interface ToolDefinition<Args extends z.ZodObject> {
  name: string;
  description: string;
  args: Args;
  concurrency: Tool["concurrency"];
  /** gets the parsed arguments: the loop validated the call against `args` before (tools/validate.ts) */
  execute(args: z.output<Args>, ctx: ToolContext): Promise<ToolOutput>;
}

export function defineTool<Args extends z.ZodObject>(def: ToolDefinition<Args>): Tool {
  return {
    name: def.name,
    description: def.description,
    parameters: modelSchema(def.args),
    argsSchema: def.args,
    concurrency: def.concurrency,
    execute: (args, ctx) => def.execute(args as z.output<Args>, ctx),
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
