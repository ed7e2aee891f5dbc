/**
 * config.get (OpenClaw's name): the effective config as a client may see it. No secret leaves the gateway: API keys,
 * tokens and token hashes, passwords, request headers (they carry keys) and the credentials in a URL are replaced
 * by "[redacted]", and their paths are listed so a client can say what it is not shown.
 */
const REDACTED = "[redacted]";
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
