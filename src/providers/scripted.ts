import fs from "node:fs";
import JSON5 from "json5";
import {
  contentImages,
  contentText,
  type ImageBlock,
  imageBytes,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  ProviderError,
  type ProviderErrorKind,
  type ProviderInit,
  type StopReason,
} from "./types.js";

/**
 * The scripted provider: a test/demo model that plays a JSON5 script of model turns — text chunks, tool calls,
 * reasoning, delays, errors. Each model call plays the next turn. It is for offline demos and for users' own
 * tests of their tools, hooks and plugins; it never talks to a network.
 *
 * ```json5
 * {
 *   turns: [
 *     { thinking: "The user wants a listing.", text: ["Let me ", "look."], toolCalls: [{ name: "exec", arguments: { command: "ls" } }] },
 *     { text: "Done: {{lastToolResult}}", usage: { input: 120, output: 12 } },
 *   ],
 *   whenDone: "cycle",   // "cycle" (start over) | "repeat-last" | "error" (default: a short apology text)
 * }
 * ```
 * `{{lastUserMessage}}` and `{{lastToolResult}}` in text are replaced from the request (their text parts), and
 * `{{lastUserMessage}}` in a tool call's string arguments too (a demo that runs what the user typed);
 * `{{imageCount}}` by the number of images the request carries and `{{lastImage}}` by the last one's type, size
 * and bytes ("image/png 1200×900 48213 bytes", or "none"), so a script can show what reached the model.
 */

export interface ScriptedToolCall {
  id?: string;
  name: string;
  arguments?: Record<string, unknown>;
}

export interface ScriptedTurn {
  text?: string | string[];
  /** reasoning before the answer; an array is streamed as one thinking delta per element */
  thinking?: string | string[];
  toolCalls?: ScriptedToolCall[];
  /** wait before the first chunk (ms) */
  delayMs?: number;
  /** wait between chunks (ms) */
  chunkDelayMs?: number;
  usage?: { input?: number; output?: number };
  stopReason?: StopReason;
  /** fail this call instead of answering */
  error?: {
    kind?: ProviderErrorKind;
    message: string;
    status?: number;
    afterChunks?: number;
    /** as if the server had sent `retry-after-ms` */
    retryAfterMs?: number;
  };
}

export interface Script {
  turns: ScriptedTurn[];
  whenDone?: "cycle" | "repeat-last" | "error" | "apologize";
}

export type ScriptSource = Script | ((request: ModelRequest, callIndex: number) => ScriptedTurn);

export function loadScriptFile(file: string): Script {
  let raw: unknown;
  try {
    raw = JSON5.parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    throw new Error(`scripted provider: cannot load script ${file}: ${(err as Error).message}`);
  }
  return validateScript(raw, file);
}

const errorKinds: readonly ProviderErrorKind[] = [
  "rate_limit",
  "server",
  "context_length",
  "auth",
  "billing",
  "model_not_found",
  "bad_request",
  "timeout",
  "aborted",
  "network",
  "bad_response",
];
const stopReasons: readonly StopReason[] = ["stop", "tool_calls", "length", "error", "aborted"];
const whenDoneModes = ["cycle", "repeat-last", "error", "apologize"] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isDelay = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;
const isCount = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;

/**
 * Checks every field up front, so a typo in a script fails when it is loaded, naming the file and the field,
 * instead of as an unrelated TypeError in the middle of a run.
 */
export function validateScript(raw: unknown, where = "script"): Script {
  function fail(field: string, expected: string): never {
    throw new Error(`scripted provider: ${where}: ${field} ${expected}`);
  }
  const oneOf = (values: readonly string[], v: unknown) => typeof v === "string" && values.includes(v);
  if (!isRecord(raw) || !Array.isArray(raw.turns)) {
    throw new Error(`scripted provider: ${where}: expected { turns: [...] }`);
  }
  if (raw.whenDone !== undefined && !oneOf(whenDoneModes, raw.whenDone)) {
    fail("whenDone", `must be one of ${whenDoneModes.join(", ")}`);
  }
  for (const [i, t] of (raw.turns as unknown[]).entries()) {
    const at = `turns[${i}]`;
    if (!isRecord(t)) fail(at, "must be an object");
    if (t.text !== undefined) {
      const ok = typeof t.text === "string" || (Array.isArray(t.text) && t.text.every((c) => typeof c === "string"));
      if (!ok) fail(`${at}.text`, "must be a string or an array of strings");
    }
    if (t.thinking !== undefined) {
      const ok =
        typeof t.thinking === "string" || (Array.isArray(t.thinking) && t.thinking.every((c) => typeof c === "string"));
      if (!ok) fail(`${at}.thinking`, "must be a string or an array of strings");
    }
    for (const key of ["delayMs", "chunkDelayMs"] as const) {
      if (t[key] !== undefined && !isDelay(t[key])) fail(`${at}.${key}`, "must be a number of milliseconds (>= 0)");
    }
    if (t.stopReason !== undefined && !oneOf(stopReasons, t.stopReason)) {
      fail(`${at}.stopReason`, `must be one of ${stopReasons.join(", ")}`);
    }
    if (t.usage !== undefined) {
      if (!isRecord(t.usage)) fail(`${at}.usage`, "must be an object");
      for (const key of ["input", "output"]) {
        if (t.usage[key] !== undefined && !isCount(t.usage[key]))
          fail(`${at}.usage.${key}`, "must be a whole number (>= 0)");
      }
    }
    if (t.toolCalls !== undefined) {
      if (!Array.isArray(t.toolCalls)) fail(`${at}.toolCalls`, "must be an array");
      for (const [j, c] of (t.toolCalls as unknown[]).entries()) {
        const callAt = `${at}.toolCalls[${j}]`;
        if (!isRecord(c)) fail(callAt, "must be an object");
        if (typeof c.name !== "string" || c.name === "") fail(`${callAt}.name`, "must be a string");
        if (c.id !== undefined && typeof c.id !== "string") fail(`${callAt}.id`, "must be a string");
        if (c.arguments !== undefined && !isRecord(c.arguments)) fail(`${callAt}.arguments`, "must be an object");
      }
    }
    if (t.error !== undefined) {
      const e = t.error;
      if (!isRecord(e)) fail(`${at}.error`, "must be an object");
      if (typeof e.message !== "string") fail(`${at}.error.message`, "must be a string");
      if (e.kind !== undefined && !oneOf(errorKinds, e.kind)) {
        fail(`${at}.error.kind`, `must be one of ${errorKinds.join(", ")}`);
      }
      if (e.status !== undefined && !isCount(e.status)) fail(`${at}.error.status`, "must be an HTTP status number");
      if (e.afterChunks !== undefined && !isCount(e.afterChunks)) {
        fail(`${at}.error.afterChunks`, "must be a whole number (>= 0)");
      }
      if (e.retryAfterMs !== undefined && !isDelay(e.retryAfterMs)) {
        fail(`${at}.error.retryAfterMs`, "must be a number of milliseconds (>= 0)");
      }
    }
  }
  return raw as unknown as Script;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  // An abort that came while the stream was suspended at a yield must end it here: an already-aborted signal never
  // fires "abort" again, and a zero delay would otherwise let every remaining chunk through.
  if (signal.aborted) return Promise.reject(new ProviderError("aborted", "scripted: request aborted"));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(t);
      reject(new ProviderError("aborted", "scripted: request aborted"));
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function lastOf(request: ModelRequest, role: "user" | "toolResult"): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i];
    if (m.role === role) return contentText(m.content);
  }
  return "";
}

function requestImages(request: ModelRequest): ImageBlock[] {
  return request.messages.flatMap((m) => (m.role === "assistant" ? [] : contentImages(m.content)));
}

function describeImage(image: ImageBlock | undefined): string {
  if (!image) return "none";
  const size = image.width && image.height ? ` ${image.width}×${image.height}` : "";
  return `${image.mimeType}${size} ${imageBytes(image)} bytes`;
}

export class ScriptedProvider implements ModelProvider {
  readonly api = "scripted" as const;
  readonly id: string;
  private readonly source: ScriptSource;
  private calls = 0;
  private toolCallCounter = 0;

  constructor(id: string, source: ScriptSource) {
    this.id = id;
    this.source = typeof source === "function" ? source : validateScript(source);
  }

  /** How many model calls have been made (useful in tests). */
  get callCount(): number {
    return this.calls;
  }

  private nextTurn(request: ModelRequest): ScriptedTurn {
    const index = this.calls++;
    if (typeof this.source === "function") return this.source(request, index);
    const { turns, whenDone } = this.source;
    if (index < turns.length) return turns[index];
    if (turns.length > 0 && whenDone === "cycle") return turns[index % turns.length];
    if (turns.length > 0 && whenDone === "repeat-last") return turns[turns.length - 1];
    if (whenDone === "error") {
      return { error: { kind: "bad_request", message: `script exhausted after ${turns.length} turns` } };
    }
    return { text: "(the scripted model has no more turns)" };
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const signal = request.signal;
    if (signal.aborted) throw new ProviderError("aborted", "scripted: request aborted");
    const turn = this.nextTurn(request);
    await sleep(turn.delayMs ?? 0, signal);
    let chunks = 0;
    const fail = (error: NonNullable<ScriptedTurn["error"]>) =>
      new ProviderError(error.kind ?? "server", `${this.id}: ${error.message}`, {
        status: error.status,
        retryAfterMs: error.retryAfterMs,
        afterOutput: chunks > 0,
      });
    const failIfDue = () => {
      if (turn.error && chunks >= (turn.error.afterChunks ?? 0)) throw fail(turn.error);
    };
    const gap = turn.chunkDelayMs ?? 0;
    failIfDue();
    const thinking = turn.thinking === undefined ? [] : Array.isArray(turn.thinking) ? turn.thinking : [turn.thinking];
    if (thinking.join("")) {
      for (const [i, delta] of thinking.entries()) {
        if (i > 0) await sleep(gap, signal);
        yield { type: "thinking_delta", delta };
      }
      yield { type: "thinking_end", thinking: thinking.join("") };
      chunks++;
    }
    const text = turn.text === undefined ? [] : Array.isArray(turn.text) ? turn.text : [turn.text];
    let outChars = 0;
    for (const raw of text) {
      if (chunks > 0) await sleep(gap, signal);
      failIfDue();
      const delta = raw
        .replaceAll("{{lastUserMessage}}", lastOf(request, "user"))
        .replaceAll("{{lastToolResult}}", lastOf(request, "toolResult"))
        .replaceAll("{{imageCount}}", String(requestImages(request).length))
        .replaceAll("{{lastImage}}", describeImage(requestImages(request).at(-1)));
      outChars += delta.length;
      yield { type: "text_delta", delta };
      chunks++;
    }
    for (const call of turn.toolCalls ?? []) {
      if (chunks > 0) await sleep(gap, signal);
      failIfDue();
      const id = call.id ?? `call_${++this.toolCallCounter}`;
      yield { type: "tool_call", id, name: call.name, arguments: withUserMessage(call.arguments ?? {}, request) };
      chunks++;
    }
    if (turn.error) throw fail(turn.error);
    // a rough token estimate: text lengths, without serializing the whole history on every call
    let inputChars = request.system?.length ?? 0;
    for (const m of request.messages) {
      if (m.role === "assistant") {
        for (const b of m.content)
          inputChars += b.type === "text" ? b.text.length : b.type === "thinking" ? b.thinking.length : 40;
      } else inputChars += m.content.length;
    }
    const input = turn.usage?.input ?? Math.ceil(inputChars / 4);
    const output = turn.usage?.output ?? Math.ceil(outChars / 4) + 8 * (turn.toolCalls?.length ?? 0);
    yield {
      type: "done",
      stopReason: turn.stopReason ?? (turn.toolCalls?.length ? "tool_calls" : "stop"),
      usage: { input, output, cacheRead: 0, cacheWrite: 0, total: input + output },
    };
  }
}

export function createScriptedProvider(init: ProviderInit | { id: string; script: ScriptSource }): ScriptedProvider {
  const script = init.script;
  if (typeof script === "string") return new ScriptedProvider(init.id, loadScriptFile(script));
  if (typeof script === "function") return new ScriptedProvider(init.id, script as ScriptSource);
  if (script && typeof script === "object") return new ScriptedProvider(init.id, script as Script);
  throw new Error(`scripted provider "${init.id}": no script configured (models.providers.${init.id}.script)`);
}

/** A tool call's string arguments with `{{lastUserMessage}}` replaced (one level deep: what scripts write). */
function withUserMessage(args: Record<string, unknown>, request: ModelRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    out[k] = typeof v === "string" ? v.replaceAll("{{lastUserMessage}}", lastOf(request, "user")) : v;
  }
  return out;
}
