import type { z } from "zod";

/*
 * The help text of each config key, from the schema's `.describe()` texts: the console's config page shows it beside
 * the value, so the help cannot drift from the schema. Paths are written as config.get's values are walked:
 * "gateway.port", "models.providers.*.apiKey" ("*" = each record entry, "[]" = each array element).
 */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  in?: z.ZodType;
  out?: z.ZodType;
}

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

export function configKeyHelp(schema: z.ZodType): Record<string, string> {
  const help: Record<string, string> = {};
  const walk = (s: z.ZodType, at: string): void => {
    if (at && s.description && help[at] === undefined) help[at] = s.description;
    const def = defOf(s);
    switch (def.type) {
      case "default":
      case "prefault":
      case "optional":
      case "nullable":
        walk(def.innerType as z.ZodType, at);
        return;
      case "pipe":
        // a preprocess or transform: the described side is either one
        walk(def.in as z.ZodType, at);
        walk(def.out as z.ZodType, at);
        return;
      case "object":
        for (const [key, value] of Object.entries(def.shape ?? {})) walk(value, at ? `${at}.${key}` : key);
        return;
      case "array":
        walk(def.element as z.ZodType, `${at}[]`);
        return;
      case "record":
        walk(def.valueType as z.ZodType, `${at}.*`);
        return;
      case "union":
        for (const o of def.options ?? []) walk(o, at);
        return;
    }
  };
  walk(schema, "");
  return help;
}
