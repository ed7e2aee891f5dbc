import { createRequire } from "node:module";

/**
 * A config text as a value: JSON5, read first as plain JSON. Most config files (every one `loopgate setup` writes,
 * the bench's) are plain JSON, and `JSON.parse` needs no module, where json5 costs a cold CLI 5 modules and a few ms
 * of loading. JSON5 is a superset of JSON that gives valid JSON the same value (`__proto__` too: both make an own
 * property), so the result is the same either way. Text that is not plain JSON (comments, unquoted keys, trailing
 * commas, a byte order mark) goes to json5, which parses it or throws its own error, with line and column.
 */
export function parseJson5Text(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return json5().parse(text);
  }
}

let loaded: typeof import("json5") | undefined;

/** json5 loaded synchronously on first use (callers are synchronous); it is CommonJS, so `require` serves. */
function json5(): typeof import("json5") {
  loaded ??= createRequire(import.meta.url)("json5") as typeof import("json5");
  return loaded;
}
