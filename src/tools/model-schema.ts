import { z } from "zod";
import type { JsonSchema } from "../providers/types.js";

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
