import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import type { z } from "zod";
import type { JsonSchema } from "../providers/types.js";
import type { Tool } from "./types.js";

/**
 * Every tool call is checked here before the tool runs (agent/loop.ts), whatever the tool's origin. A tool declared
 * with zod (tools/define.ts) is checked with its zod schema; a tool that only has a JSON Schema (plugin tools, later
 * MCP tools) with ajv, compiled once per schema. A refused call becomes a tool error the model reads, naming each
 * field and what was wrong, so its next call can be right.
 */

export type ArgsCheck = { ok: true; args: Record<string, unknown> } | { ok: false; error: string };

/**
 * A promise only when the tool's zod schema is still to be loaded (a built-in's first call that its JSON Schema
 * does not plainly accept): every other check answers at once, as it always did.
 */
export function checkToolArgs(tool: Tool, args: unknown): ArgsCheck | Promise<ArgsCheck> {
  const schema = tool.argsSchema;
  if (typeof schema !== "function")
    return withProblems(tool, schema ? zodProblems(schema, args) : ajvProblems(tool, args));
  const plain = plainlyAccepted(tool.parameters, args);
  if (plain) return { ok: true, args: plain };
  const loaded = schema();
  if (loaded instanceof Promise) return loaded.then((s) => withProblems(tool, zodProblems(s, args)));
  return withProblems(tool, zodProblems(loaded, args));
}

function withProblems(tool: Tool, problems: { args: Record<string, unknown> } | string): ArgsCheck {
  if (typeof problems !== "string") return { ok: true, args: problems.args };
  return { ok: false, error: `invalid arguments for ${tool.name}: ${problems}` };
}

/**
 * Compiles a JSON-Schema-only tool's validator now, so a schema ajv cannot use is a load-time error naming the tool
 * rather than a failure at its first call. Zod tools need nothing.
 */
export function prepareToolValidation(tool: Tool): void {
  if (tool.argsSchema) return;
  try {
    validatorFor(tool.parameters);
  } catch (err) {
    throw new Error(`tool "${tool.name}" has a parameters schema that cannot be used: ${(err as Error).message}`);
  }
}

// ─── zod ────────────────────────────────────────────────────────────────────

function zodProblems(
  schema: z.ZodType<Record<string, unknown>>,
  args: unknown,
): { args: Record<string, unknown> } | string {
  const result = schema.safeParse(withoutNullOptionals(schema, args));
  if (result.success) return { args: result.data };
  return result.error.issues.map((issue) => describeZodIssue(issue, args)).join("; ");
}

/**
 * Models now and then send `null` for an optional argument they mean to leave out; the built-ins always took that
 * as absent, so a null optional field is dropped before the check (a null where a value is required still fails).
 */
function withoutNullOptionals(schema: z.ZodType, args: unknown): unknown {
  const shape = (schema as Partial<z.ZodObject>).shape;
  if (!shape || !isPlainObject(args)) return args;
  let out: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(args)) {
    if (value !== null || !shape[key]?.safeParse(undefined).success) continue;
    out ??= { ...args };
    delete out[key];
  }
  return out ?? args;
}

function describeZodIssue(issue: z.core.$ZodIssue, args: unknown): string {
  const at = issue.path.join(".");
  const prefix = at ? `${at}: ` : "";
  switch (issue.code) {
    case "invalid_type": {
      const value = valueAt(args, issue.path);
      if (value === undefined && at) return `${at}: is required`;
      return `${prefix}expected ${issue.expected === "int" ? "integer" : issue.expected}, got ${jsonType(value)}`;
    }
    case "too_small":
      if (issue.origin === "string") {
        return Number(issue.minimum) === 1
          ? `${prefix}must not be empty`
          : `${prefix}must be at least ${issue.minimum} characters`;
      }
      return `${prefix}must be ${issue.inclusive ? ">=" : ">"} ${issue.minimum}`;
    case "too_big":
      return `${prefix}must be ${issue.inclusive ? "<=" : "<"} ${issue.maximum}`;
    case "unrecognized_keys":
      return issue.keys.map((key) => `${at ? `${at}.` : ""}${key}: unknown field`).join("; ");
    default:
      return `${prefix}${issue.message}`;
  }
}

// ─── plainly accepted ───────────────────────────────────────────────────────

/**
 * The arguments as zod would return them, when the tool's JSON Schema (a built-in's, written out from its zod object)
 * accepts them by rules that zod applies the same way: a flat object of strings, safe integers and finite numbers
 * with the schema's bounds, no unknown field, every required one present, a null optional dropped (as
 * `withoutNullOptionals` does). Anything else, valid or not, is left to zod (undefined), which words the errors.
 * zod's output for such an object is its known fields in the schema's order.
 */
function plainlyAccepted(schema: JsonSchema, args: unknown): Record<string, unknown> | undefined {
  if (schema.type !== "object" || schema.additionalProperties !== false || !isPlainObject(args)) return undefined;
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  const required = (schema.required as string[] | undefined) ?? [];
  if (!properties) return undefined;
  for (const key of Object.keys(args)) if (!Object.hasOwn(properties, key)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, rule] of Object.entries(properties)) {
    const value = args[key];
    const isRequired = required.includes(key);
    if (value === undefined || (value === null && !isRequired)) {
      if (isRequired) return undefined;
      continue;
    }
    if (!plainValue(rule, value)) return undefined;
    out[key] = value;
  }
  return out;
}

const knownKeywords = new Set(["type", "description", "minLength", "minimum", "exclusiveMinimum", "maximum"]);

function plainValue(rule: JsonSchema, value: unknown): boolean {
  for (const keyword of Object.keys(rule)) if (!knownKeywords.has(keyword)) return false;
  if (rule.type === "string") {
    return typeof value === "string" && (rule.minLength === undefined || value.length >= Number(rule.minLength));
  }
  if (rule.type === "integer" && !Number.isSafeInteger(value)) return false;
  if (rule.type !== "integer" && (rule.type !== "number" || typeof value !== "number" || !Number.isFinite(value))) {
    return false;
  }
  const n = value as number;
  if (typeof rule.minimum === "number" && !(n >= rule.minimum)) return false;
  if (typeof rule.exclusiveMinimum === "number" && !(n > rule.exclusiveMinimum)) return false;
  if (typeof rule.maximum === "number" && !(n <= rule.maximum)) return false;
  return rule.minLength === undefined;
}

// ─── ajv ────────────────────────────────────────────────────────────────────

// strict off: a plugin's schema may carry keywords ajv does not know (annotations of other tools); they are ignored
const ajvOptions = { strict: false, allErrors: true };
let draft7: Ajv | undefined;
let draft2020: Ajv2020 | undefined;
/**
 * ajv (91 modules, ~40-50 ms of its own top-level code on a cold start: bench/README.md, issue 34) is loaded on the
 * first JSON-Schema-only tool, never by a process whose tools are all zod-declared (the built-ins, `agent --local`
 * without MCP servers or plugins). A synchronous require, since a tool call's check is synchronous; ajv is CommonJS.
 */
const load = createRequire(import.meta.url);
const ajvModule = () => load("ajv") as typeof import("ajv");
const ajv2020Module = () => load("ajv/dist/2020.js") as typeof import("ajv/dist/2020.js");
/** by schema object: a tool copied for tracing keeps its `parameters`, so it keeps its compiled validator too */
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

function validatorFor(schema: JsonSchema): ValidateFunction {
  let validate = compiled.get(schema);
  if (validate) return validate;
  if (typeof schema.$schema === "string" && schema.$schema.includes("2020-12")) {
    draft2020 ??= new (ajv2020Module().Ajv2020)(ajvOptions);
    validate = draft2020.compile(schema);
  } else {
    draft7 ??= new (ajvModule().Ajv)(ajvOptions);
    validate = draft7.compile(schema);
  }
  compiled.set(schema, validate);
  return validate;
}

function ajvProblems(tool: Tool, args: unknown): { args: Record<string, unknown> } | string {
  const validate = validatorFor(tool.parameters);
  if (validate(args)) return { args: args as Record<string, unknown> };
  return (validate.errors ?? []).map((e) => describeAjvError(e, args)).join("; ") || "rejected by the schema";
}

function describeAjvError(error: ErrorObject, args: unknown): string {
  const path = error.instancePath.split("/").slice(1).map(unescapePointer);
  const at = path.join(".");
  const prefix = at ? `${at}: ` : "";
  const field = (name: string) => (at ? `${at}.${name}` : name);
  switch (error.keyword) {
    case "required":
      return `${field(String(error.params.missingProperty))}: is required`;
    case "additionalProperties":
      return `${field(String(error.params.additionalProperty))}: unknown field`;
    case "type":
      return `${prefix}expected ${error.params.type}, got ${jsonType(valueAt(args, path))}`;
    default:
      return `${prefix}${error.message ?? error.keyword}`;
  }
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

// ─── shared ─────────────────────────────────────────────────────────────────

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** The value's type as JSON Schema names it, so the message reads in the schema's own words. */
function jsonType(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
