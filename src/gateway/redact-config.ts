import { isDeepStrictEqual } from "node:util";

/**
 * config.get (OpenClaw's name): the effective config as a client may see it. No secret leaves the gateway: API keys,
 * tokens and token hashes, passwords, request headers (they carry keys) and the credentials in a URL are replaced
 * by "[redacted]", and their paths are listed so a client can say what it is not shown.
 */
export const REDACTED = "[redacted]";
/** keys whose value is a secret, wherever they appear */
const SECRET_KEY = /^(apiKey|key|token|tokenHash|password|secret|clientSecret|authorization|cookie)$/i;
/** keys whose whole value is secret (headers carry keys) */
const SECRET_OBJECT_KEY = /^headers$/i;

export function redactConfig(config: unknown): { config: unknown; redacted: string[] } {
  const redacted: string[] = [];
  const walk = (value: unknown, at: string): unknown => {
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${at}[${i}]`));
    if (value !== null && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const path = at ? `${at}.${k}` : k;
        if (v !== undefined && (SECRET_KEY.test(k) || SECRET_OBJECT_KEY.test(k))) {
          out[k] = REDACTED;
          redacted.push(path);
        } else out[k] = walk(v, path);
      }
      return out;
    }
    if (typeof value === "string" && /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]+@/i.test(value)) {
      redacted.push(at);
      return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/i, `$1${REDACTED}@`);
    }
    return value;
  };
  return { config: walk(config, ""), redacted };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * A config written back by a client that was only shown redacted secrets (config.patch, config.apply): a value that
 * is exactly what config.get showed for the current one (the marker, or a URL with its credentials replaced) stands
 * for the current value and is swapped back; a marker with no current value behind it is left out (it must never be
 * written as a secret). Any other value is the client's, a new secret included. Returns the restored copy and the
 * paths where a marker matches nothing it could stand for.
 */
export function keepRedactedSecrets(value: unknown, current: unknown): { value: unknown; problems: string[] } {
  const problems: string[] = [];
  const walk = (v: unknown, cur: unknown, at: string): unknown => {
    if (Array.isArray(v)) {
      return v.map((item, i) => {
        const before = Array.isArray(cur) ? cur[i] : undefined;
        const path = `${at}[${i}]`;
        if (typeof item !== "string" || !item.includes(REDACTED)) return walk(item, before, path);
        // in a list only a URL's credentials are redacted
        if (before !== undefined && isDeepStrictEqual(redactConfig(before).config, item)) return before;
        problems.push(markerProblem(path));
        return item;
      });
    }
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) {
        const path = at ? `${at}.${k}` : k;
        const before = isPlainObject(cur) ? cur[k] : undefined;
        if (!containsMarker(item)) {
          out[k] = walk(item, before, path);
          continue;
        }
        // what config.get would have shown for the current value under this key
        const shown =
          before === undefined ? undefined : (redactConfig({ [k]: before }).config as Record<string, unknown>)[k];
        if (before !== undefined && isDeepStrictEqual(shown, item)) out[k] = before;
        else if (before === undefined && item === REDACTED) continue;
        else if (isPlainObject(item) || Array.isArray(item)) out[k] = walk(item, before, path);
        else problems.push(markerProblem(path));
      }
      return out;
    }
    return v;
  };
  return { value: walk(value, current, ""), problems };
}

function containsMarker(v: unknown): boolean {
  if (typeof v === "string") return v.includes(REDACTED);
  if (Array.isArray(v)) return v.some(containsMarker);
  if (isPlainObject(v)) return Object.values(v).some(containsMarker);
  return false;
}

function markerProblem(path: string): string {
  return `${path}: holds "${REDACTED}" but the current value is not what config.get showed there; send the value itself, or leave the key out to keep the current one`;
}
