/**
 * Precompiled checks of the common shape of the params a client sends on every turn (`agent`) and of the request
 * frame around them. A value such a check accepts is exactly what the zod schema (protocol/params.ts) would return
 * for it; anything else (a field not listed here, a wrong type, an ignored OpenClaw field, attachments) is left to
 * the zod schema, which also words every error, so error messages do not change. Zod's parse cost ~0.1 ms per turn.
 */
import { hasControlCharacter } from "./control-chars.js";
import { thinkingLevels } from "./enums.js";

type Check = (v: unknown) => boolean;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const nonEmpty: Check = (v) => typeof v === "string" && v.length > 0;
const plainText =
  (max: number): Check =>
  (v) =>
    typeof v === "string" && v.length <= max && !hasControlCharacter(v);
const plainName = (max = Number.POSITIVE_INFINITY): Check => {
  const text = plainText(max);
  return (v) => text(v) && (v as string).length > 0;
};
const AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/i;
const thinking = new Set<unknown>(thinkingLevels);

/** The `agent` fields a plain turn uses, each with the same rule as its zod schema. */
const agentFields = new Map<string, Check>([
  ["message", nonEmpty],
  ["idempotencyKey", plainName(512)],
  ["sessionKey", plainText(512)],
  ["agentId", (v) => typeof v === "string" && AGENT_ID.test(v)],
  ["sessionId", plainName()],
  ["model", nonEmpty],
  ["provider", nonEmpty],
  ["thinking", (v) => thinking.has(v)],
  ["timeout", (v) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0],
  ["lane", nonEmpty],
  ["label", plainName(512)],
  ["deliver", (v) => typeof v === "boolean"],
]);

/** The params object itself when it is a plain turn's and valid; undefined means "ask zod". */
export function commonAgentParams(v: unknown): Record<string, unknown> | undefined {
  if (!isObject(v) || v.message === undefined || v.idempotencyKey === undefined) return undefined;
  for (const key in v) {
    const check = agentFields.get(key);
    if (check === undefined || !check(v[key])) return undefined;
  }
  return v;
}

/** `{ type: "req", id, method, params? }` with unknown keys dropped, as z.object does; undefined means "ask zod". */
export function commonRequestFrame(v: unknown): Record<string, unknown> | undefined {
  if (!isObject(v) || v.type !== "req" || !nonEmpty(v.id) || !nonEmpty(v.method)) return undefined;
  const out: Record<string, unknown> = { type: v.type, id: v.id, method: v.method };
  if ("params" in v) out.params = v.params;
  return out;
}
