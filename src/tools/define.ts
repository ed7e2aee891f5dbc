import type { z } from "zod";
import type { JsonSchema } from "../providers/types.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";

/**
 * A tool whose arguments are stated as a zod object: calls are checked with it (tools/validate.ts), and the model is
 * told `parameters`, which is `modelSchema` of it (tools/model-schema.ts).
 */
export interface ToolDefinition<Args extends z.ZodObject> {
  name: string;
  description: string;
  /**
   * The zod object, or how to load it. The built-ins load theirs (tools/builtin-args.ts) on the first call their
   * JSON Schema does not plainly accept, so a one-shot CLI turn neither loads zod nor builds a schema (issue 34).
   */
  args: Args | (() => Promise<Args>);
  /** `modelSchema(args)`; the built-ins write theirs out (tools/builtin.test.ts holds them equal) */
  parameters: JsonSchema;
  concurrency: Tool["concurrency"];
  /** gets the parsed arguments: the loop validated the call against `args` before (tools/validate.ts) */
  execute(args: z.output<Args>, ctx: ToolContext): Promise<ToolOutput>;
}

export function defineTool<Args extends z.ZodObject>(def: ToolDefinition<Args>): Tool {
  const args = def.args;
  let loaded: Args | undefined;
  let loading: Promise<Args> | undefined;
  // the first caller starts the load, later ones share it; once loaded, the schema itself (no promise, no tick)
  const load = (): Args | Promise<Args> => {
    if (loaded) return loaded;
    if (!loading) {
      loading = (args as () => Promise<Args>)().then((schema) => {
        loaded = schema;
        return schema;
      });
    }
    return loading;
  };
  return {
    name: def.name,
    description: def.description,
    parameters: def.parameters,
    argsSchema: typeof args === "function" ? load : args,
    concurrency: def.concurrency,
    execute: (input, ctx) => def.execute(input as z.output<Args>, ctx),
  };
}
