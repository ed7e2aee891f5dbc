import { createRequire } from "node:module";

// The yaml package costs tens of milliseconds to load and is only needed when a SKILL.md or HOOK.md is actually
// parsed, so it is required synchronously on first use instead of at CLI start.
const require = createRequire(import.meta.url);
let parseImpl: ((text: string) => unknown) | undefined;

export function parseYaml(text: string): unknown {
  parseImpl ??= (require("yaml") as { parse: (text: string) => unknown }).parse;
  return parseImpl(text);
}
