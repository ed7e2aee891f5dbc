import { z } from "zod";
import { configKeyHelp } from "../../config/key-help.js";
import { configSchema } from "../../config/schema.js";
import type { ConfigSchemaResult } from "../../protocol/operator.js";
import { looseEmptyParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";

/** Built once: the schema does not change while the process runs. */
let cached: ConfigSchemaResult | undefined;

function build(): ConfigSchemaResult {
  // "input": what a config file may say (defaults optional); transforms and refinements are not representable
  const schema = z.toJSONSchema(configSchema, { io: "input", unrepresentable: "any" });
  return { schema, help: configKeyHelp(configSchema) };
}

/**
 * config.schema (OpenClaw's name, admin like config.get): the config's JSON Schema, and each described key's help
 * text by path, which the console's config page shows beside the redacted values of config.get.
 */
export const configSchemaMethod = defineMethod({
  name: "config.schema",
  scope: "admin",
  params: looseEmptyParamsSchema,
  handle({ reply }) {
    cached ??= build();
    reply.ok(cached);
  },
});
