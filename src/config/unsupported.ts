/*
 * Keys the schema accepts (OpenClaw has them, and configs carry them over) but that nothing in Loopgate reads yet.
 * Setting one is an error at load rather than a silent no-op, so nobody relies on a key that does nothing.
 * When a key gets wired up, delete its line here: this list is the only place that rejects it.
 */

interface UnsupportedKey {
  /** key path; "*" matches every array element or record entry */
  path: string;
  /** whether a value found at the path counts as set; default: any value */
  isSet?: (value: unknown) => boolean;
  /** what to say instead of the OpenClaw-compatibility explanation */
  why?: string;
  /** leave the value out of the message (it may hold secrets, e.g. an MCP server's headers) */
  hideValue?: boolean;
}

export const unsupportedKeys: readonly UnsupportedKey[] = [];

/** One problem per unsupported key set in the raw (pre-default) config, e.g. "<path>: not yet supported ...". */
export function unsupportedKeyProblems(raw: unknown): string[] {
  const problems: string[] = [];
  for (const key of unsupportedKeys) {
    for (const found of valuesAt(raw, key.path.split("."), "")) {
      if (key.isSet ? key.isSet(found.value) : true) {
        problems.push(
          key.why
            ? `${found.path}: ${key.hideValue ? "" : `${JSON.stringify(found.value)} is `}not yet supported (${key.why})`
            : `${found.path}: not yet supported (accepted for OpenClaw compatibility, but nothing reads it); remove it`,
        );
      }
    }
  }
  return problems;
}

function valuesAt(node: unknown, segments: string[], at: string): Array<{ path: string; value: unknown }> {
  if (segments.length === 0) return node === undefined ? [] : [{ path: at, value: node }];
  if (node === null || typeof node !== "object") return [];
  const [head, ...rest] = segments;
  const entries: Array<[string | number, unknown]> =
    head === "*"
      ? Object.entries(node).map(([k, v]) => [Array.isArray(node) ? Number(k) : k, v])
      : [[head, (node as Record<string, unknown>)[head]]];
  return entries.flatMap(([k, v]) => valuesAt(v, rest, typeof k === "number" ? `${at}[${k}]` : at ? `${at}.${k}` : k));
}
