import { parseYaml as parse } from "../infra/lazy-yaml.js";

export type FrontMatter = { ok: true; data: Record<string, unknown>; body: string } | { ok: false; error: string };

// The closing fence is searched line by line (multiline flag) so an empty block (`---\n---`) still parses.
const FENCE = /^---[ \t]*\r?\n([\s\S]*?)^---[ \t]*\r?$/m;

/**
 * Reads the YAML block at the top of a HOOK.md / SKILL.md. Errors are returned, not thrown, because callers
 * scan many folders and must report one bad file without losing the rest.
 */
export function parseFrontMatter(text: string): FrontMatter {
  // A BOM from a Windows editor would otherwise hide the opening fence.
  const src = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const match = FENCE.exec(src);
  if (match?.index !== 0) {
    return { ok: false, error: "no front matter (the file must start with a --- YAML block)" };
  }
  let data: unknown;
  try {
    data = parse(match[1]);
  } catch (err) {
    const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
    return { ok: false, error: `front matter is not valid YAML: ${message}` };
  }
  if (data === null || data === undefined) data = {};
  if (typeof data !== "object" || Array.isArray(data)) {
    return { ok: false, error: "front matter must be a YAML mapping (key: value lines)" };
  }
  const rest = src.slice(match[0].length).replace(/^\r?\n/, "");
  return { ok: true, data: data as Record<string, unknown>, body: rest };
}
