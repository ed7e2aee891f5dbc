/**
 * Making tool args and results safe to log, emit and hand back to the model: long text is cut with a visible
 * marker, image payloads become their size and type, and credentials are redacted.
 */

import type { OmittedImage } from "../protocol/agent-events.js";
import { type ImageBlock, imageBytes } from "../providers/types.js";

export const EVENT_TEXT_MAX = 8000;
export const MODEL_TEXT_MAX = 60000;
const MAX_DEPTH = 64;
const REDACTED = "[redacted]";

/**
 * An inline base64 data URL (`data:image/png;base64,iVBOR…`) of at least this many payload characters: a tool that
 * prints one (exec echoing a file, a page dump) would send kilobytes of noise to every client and to the model.
 */
const INLINE_DATA_URL = /data:([a-z]+\/[a-z0-9.+-]+)((?:;[a-z0-9-]+=[^;,\s]*)*);base64,([A-Za-z0-9+/]{64,}={0,2})/gi;

/**
 * Replaces inline base64 data URLs in tool text with `[data:image/png;base64, 12.3 KB omitted]` (the decoded size):
 * both the events and the model's context get the placeholder, never the payload. Short ones are kept.
 */
export function omitInlineDataUrls(text: string): string {
  if (!text.includes("base64,")) return text;
  return text.replace(INLINE_DATA_URL, (_all, mime: string, _params: string, payload: string) => {
    const bytes = Math.floor((payload.length * 3) / 4) - (payload.endsWith("==") ? 2 : payload.endsWith("=") ? 1 : 0);
    return `[data:${mime.toLowerCase()};base64, ${(bytes / 1024).toFixed(1)} KB omitted]`;
  });
}

/** Keeps the head and tail of `text` with a visible `…[truncated N chars]…` marker; the result fits in `max`. */
export function capText(text: string, max: number = EVENT_TEXT_MAX): string {
  if (text.length <= max) return text;
  return keepHeadAndTail(text, max, 0.5, false, (cut) => `\n…[truncated ${cut} chars]…\n`);
}

/**
 * Caps a result that goes back into the model context. The tail gets the larger share because failures
 * (stack traces, compiler errors, the exit status) tend to be printed last; cuts fall on line breaks when one
 * is near, so the model does not see half lines.
 */
export function capForModel(text: string, max: number = MODEL_TEXT_MAX): string {
  if (text.length <= max) return text;
  return keepHeadAndTail(
    text,
    max,
    0.4,
    true,
    (cut, lines) => `\n\n[... ${cut} chars (${lines} lines) omitted from the middle ...]\n\n`,
  );
}

function keepHeadAndTail(
  text: string,
  max: number,
  headShare: number,
  snapToLines: boolean,
  marker: (cut: number, lines: number) => string,
): string {
  // The marker is measured with the largest numbers it can show, so the result never exceeds `max`.
  const keep = Math.max(0, max - marker(text.length, text.length).length);
  let headEnd = Math.ceil(keep * headShare);
  let tailStart = text.length - (keep - headEnd);
  if (snapToLines) {
    const window = Math.floor(keep * 0.1);
    const lineEnd = text.lastIndexOf("\n", headEnd - 1);
    if (lineEnd >= 0 && headEnd - lineEnd <= window) headEnd = lineEnd;
    const lineStart = text.indexOf("\n", tailStart);
    if (lineStart >= 0 && lineStart + 1 - tailStart <= window) tailStart = lineStart + 1;
  }
  // Never split a surrogate pair: half an emoji turns into U+FFFD in JSON and in the model's view.
  if (headEnd > 0 && isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd--;
  if (tailStart < text.length && isLowSurrogate(text.charCodeAt(tailStart))) tailStart++;
  const middle = text.slice(headEnd, tailStart);
  // A cut on a line break leaves that break in the middle; it ends the kept head line rather than omitting one.
  const lines = middle.split("\n").length - 1 - (middle.startsWith("\n") ? 1 : 0);
  return text.slice(0, headEnd) + marker(middle.length, lines) + text.slice(tailStart);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** An image part as events and logs show it (`{type, mimeType, bytes, width, height, omitted: true}`). */
export function omittedImage(image: ImageBlock): OmittedImage {
  return {
    type: "image",
    mimeType: image.mimeType,
    bytes: imageBytes(image),
    ...(image.width !== undefined ? { width: image.width } : {}),
    ...(image.height !== undefined ? { height: image.height } : {}),
    omitted: true,
  };
}

/**
 * A copy of `value` fit for events and logs: strings capped, images and binary buffers summarized by size,
 * cycles and very deep nesting cut off, values JSON cannot carry (functions, symbols, bigint) made plain.
 */
export function sanitizeForEvent(value: unknown, maxString: number = EVENT_TEXT_MAX): unknown {
  return sanitizeValue(value, maxString, new Set(), 0);
}

function sanitizeValue(value: unknown, maxString: number, ancestors: Set<object>, depth: number): unknown {
  if (typeof value === "string") return sanitizeString(value, maxString);
  if (value === null || typeof value === "number" || typeof value === "boolean" || value === undefined) return value;
  if (typeof value === "bigint") return value.toString();
  if (typeof value !== "object") return undefined;

  if (ancestors.has(value)) return "[circular]";
  if (depth >= MAX_DEPTH) return "[nested too deep]";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString();
  if (value instanceof Error) return { name: value.name, message: sanitizeString(value.message, maxString) };
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return { type: "binary", bytes: value.byteLength };

  const image = summarizeImage(value);
  if (image) return image;

  ancestors.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => sanitizeValue(item, maxString, ancestors, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const clean = sanitizeValue(item, maxString, ancestors, depth + 1);
      if (clean !== undefined) out[key] = clean;
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

const DATA_URL = /^data:([^;,]+)?(?:;[^,]*)?;base64,/i;

function sanitizeString(text: string, maxString: number): string {
  // A data URL would otherwise be logged as 8000 chars of base64 that nobody can read.
  const dataUrl = DATA_URL.exec(text);
  if (dataUrl) {
    const bytes = base64Bytes(text.slice(dataUrl[0].length));
    return `[data URL: ${dataUrl[1] ?? "application/octet-stream"}, ${bytes} bytes]`;
  }
  return capText(text, maxString);
}

/** Recognizes the image shapes tools and providers use: `{type:"image",data,mimeType}`, Anthropic, OpenAI. */
function summarizeImage(value: object): OmittedImage | undefined {
  const obj = value as Record<string, unknown>;
  if (obj.type === "image" && typeof obj.data === "string") {
    const summary = fromData(obj.data, typeof obj.mimeType === "string" ? obj.mimeType : undefined);
    if (typeof obj.width === "number") summary.width = obj.width;
    if (typeof obj.height === "number") summary.height = obj.height;
    return summary;
  }
  if (obj.type === "image" && isRecord(obj.source) && typeof obj.source.data === "string") {
    const mime = typeof obj.source.media_type === "string" ? obj.source.media_type : undefined;
    return fromData(obj.source.data, mime);
  }
  if (obj.type === "image_url" && isRecord(obj.image_url) && typeof obj.image_url.url === "string") {
    if (DATA_URL.test(obj.image_url.url)) return fromData(obj.image_url.url, undefined);
  }
  return undefined;
}

function fromData(data: string, mimeType: string | undefined): OmittedImage {
  const dataUrl = DATA_URL.exec(data);
  if (dataUrl) {
    return {
      type: "image",
      mimeType: mimeType ?? dataUrl[1] ?? "image/*",
      bytes: base64Bytes(data.slice(dataUrl[0].length)),
      omitted: true,
    };
  }
  return { type: "image", mimeType: mimeType ?? "image/*", bytes: base64Bytes(data), omitted: true };
}

function base64Bytes(base64: string): number {
  return Buffer.byteLength(base64.replace(/\s+/g, ""), "base64");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/**
 * Keys whose values are credentials, matched after lower-casing and dropping `-`, `_`, `.` and spaces.
 * Anchored at the end so that counts like `maxTokens` stay visible while `githubToken` does not.
 */
const SECRET_KEY =
  /(?:apikeys?|token|secrets?|secretkey|passwords?|passwd|passphrase|authorization|cookies?|privatekeys?|accesskey|credentials?)$/;
const SECRET_KEY_EXACT = new Set(["auth", "pat", "sessionid", "sid"]);

function isSecretKey(key: string): boolean {
  const normalized = key.toLowerCase().replace(/[-_. ]/g, "");
  return SECRET_KEY.test(normalized) || SECRET_KEY_EXACT.has(normalized);
}

type Rule = { pattern: RegExp; replace: string | ((match: string, ...groups: string[]) => string) };

function keepQuotes(prefix: string, value: string): string {
  const quote = value[0] === '"' || value[0] === "'" ? value[0] : "";
  return `${prefix}${quote}${REDACTED}${quote}`;
}

/** Order matters: whole PEM blocks first, then well-known token formats, then context-based rules. */
const SECRET_RULES: Rule[] = [
  {
    pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
    replace: REDACTED,
  },
  // Provider key formats (OpenAI/Anthropic, Stripe, GitHub, GitLab, Slack, AWS, Google, npm, Hugging Face), JWTs.
  { pattern: /\bsk-[A-Za-z0-9_-]{16,}/g, replace: REDACTED },
  { pattern: /\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/g, replace: REDACTED },
  { pattern: /\bgh[pousr]_[A-Za-z0-9]{30,}/g, replace: REDACTED },
  { pattern: /\bgithub_pat_[A-Za-z0-9_]{30,}/g, replace: REDACTED },
  { pattern: /\bglpat-[A-Za-z0-9_-]{20,}/g, replace: REDACTED },
  { pattern: /\bxox[abposre]-[A-Za-z0-9-]{10,}/g, replace: REDACTED },
  { pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, replace: REDACTED },
  { pattern: /\bAIza[0-9A-Za-z_-]{35}/g, replace: REDACTED },
  { pattern: /\bnpm_[A-Za-z0-9]{36}\b/g, replace: REDACTED },
  { pattern: /\bhf_[A-Za-z0-9]{30,}/g, replace: REDACTED },
  { pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, replace: REDACTED },
  // user:password@host in URLs: only the password goes. The scheme starts where a run of scheme characters does
  // (not at every `\b` inside `a-b-c…`, which costs O(n²) on a long run).
  { pattern: /((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(?=@)/gi, replace: `$1${REDACTED}` },
  // Header values: `Authorization: Bearer x`, `Cookie: a=b`, also inside curl -H "..." strings.
  {
    pattern: /(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|bot|digest)\s+)?)[^\s"',;]+/gi,
    replace: `$1${REDACTED}`,
  },
  { pattern: /(\b(?:set-)?cookie["']?\s*:\s*)[^"'\r\n]+/gi, replace: `$1${REDACTED}` },
  { pattern: /(\bbearer\s+)[A-Za-z0-9._~+/-]{8,}=*/gi, replace: `$1${REDACTED}` },
  // Shell-style assignments (`GITHUB_TOKEN=...`); upper case only, so code like `token = get()` is left alone.
  {
    pattern:
      /(\b[A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|SECRET_KEY|PASSWORD|PASSWD|PRIVATE_KEY|ACCESS_KEY)=)("[^"]*"|'[^']*'|[^\s"'&;]+)/g,
    replace: (_m, prefix, value) => keepQuotes(prefix, value),
  },
  // Query parameters: `?access_token=...&`.
  {
    pattern:
      /([?&](?:access_token|token|api_?key|apikey|key|secret|password|client_secret|sig|signature)=)[^\s&#"']+/gi,
    replace: `$1${REDACTED}`,
  },
  // Command-line flags: `--password x`, `--api-key=x`.
  {
    pattern: /(\s--?[a-z0-9-]*(?:password|passwd|token|secret|api-?key)(?:=|\s+))("[^"]*"|'[^']*'|[^\s"']+)/gi,
    replace: (_m, prefix, value) => keepQuotes(prefix, value),
  },
  // Quoted JSON/YAML-ish pairs inside text: `"apiKey": "..."`. The name starts where a run of name characters
  // starts: tried from every position inside a long run, the match would cost O(n²) on one long word.
  {
    pattern:
      /((?<![A-Za-z0-9_-])["']?[A-Za-z0-9_-]*(?:api_?key|apiKey|token|Token|secret|Secret|password|Password)["']?\s*:\s*)("[^"]*"|'[^']*')/g,
    replace: (_m, prefix, value) => keepQuotes(prefix, value),
  },
];

/** Redacts credential-looking substrings of `text`, leaving the rest (e.g. the rest of a shell command) intact. */
export function redactText(text: string): string {
  let out = text;
  for (const rule of SECRET_RULES) {
    out = out.replace(rule.pattern, rule.replace as (match: string, ...groups: string[]) => string);
  }
  return out;
}

/**
 * A deep copy of tool args fit for logs and events: values under credential-like keys become "[redacted]" and
 * credential-looking substrings are redacted in every string, wherever it sits.
 */
export function redactSecrets(args: Record<string, unknown>): Record<string, unknown> {
  return redactValue(args, new Set(), 0) as Record<string, unknown>;
}

function redactValue(value: unknown, ancestors: Set<object>, depth: number): unknown {
  if (typeof value === "string") return redactText(value);
  if (value === null || typeof value !== "object") return value;
  if (ancestors.has(value)) return "[circular]";
  if (depth >= MAX_DEPTH) return "[nested too deep]";
  if (value instanceof Date || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value;
  ancestors.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => redactValue(item, ancestors, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const hasValue = item !== undefined && item !== null && item !== "";
      out[key] = hasValue && isSecretKey(key) ? REDACTED : redactValue(item, ancestors, depth + 1);
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}
