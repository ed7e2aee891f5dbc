import { isDeepStrictEqual } from "node:util";

/*
 * JSON merge patch (RFC 7396), as OpenClaw's config.patch takes it: objects merge key by key, `null` deletes a key,
 * anything else (an array too) replaces the value. Pure; neither input is changed.
 */

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key], value);
  }
  return out;
}

/**
 * The paths where the patch replaces an array with one that lacks some of its entries: OpenClaw asks the client to
 * confirm those in `replacePaths`, so a client that read an older list cannot silently drop what was added since.
 */
export function arraysShortenedBy(target: unknown, patch: unknown, at = ""): string[] {
  if (!isPlainObject(patch) || !isPlainObject(target)) return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(patch)) {
    const path = at ? `${at}.${key}` : key;
    const before = target[key];
    if (Array.isArray(before) && Array.isArray(value)) {
      if (before.some((entry) => !value.some((v) => covers(v, entry)))) out.push(path);
    } else out.push(...arraysShortenedBy(before, value, path));
  }
  return out;
}

/**
 * Whether `entry` keeps what `old` said: equal, or an object with every key of `old` kept (a client echoing
 * config.get sends entries with their defaults filled in).
 */
function covers(entry: unknown, old: unknown): boolean {
  if (isPlainObject(entry) && isPlainObject(old)) return Object.keys(old).every((k) => covers(entry[k], old[k]));
  return isDeepStrictEqual(entry, old);
}
