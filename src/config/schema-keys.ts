import type { z } from "zod";

/*
 * Every key path the config schema accepts, e.g. "agents.list[].model.primary" or "models.providers.*.apiKey"
 * ("[]" = each array element, "*" = each record entry). The key audit (keys.test.ts) checks that each one is
 * either read by code or rejected; a new key without either fails it.
 */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  /** a pipe's (z.preprocess) target schema */
  out?: z.ZodType;
}

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

export function schemaKeyPaths(schema: z.ZodType, at = ""): string[] {
  const def = defOf(schema);
  switch (def.type) {
    case "default":
    case "prefault":
    case "optional":
      return schemaKeyPaths(def.innerType as z.ZodType, at);
    case "object":
      return Object.entries(def.shape ?? {}).flatMap(([key, value]) => {
        const inner = schemaKeyPaths(value, at ? `${at}.${key}` : key);
        return inner.length ? inner : [at ? `${at}.${key}` : key];
      });
    case "array":
      return schemaKeyPaths(def.element as z.ZodType, `${at}[]`);
    case "record":
      return schemaKeyPaths(def.valueType as z.ZodType, `${at}.*`);
    case "pipe":
      return schemaKeyPaths(def.out as z.ZodType, at);
    case "union":
      return [...new Set((def.options ?? []).flatMap((o) => schemaKeyPaths(o, at)))];
    default:
      return [];
  }
}
