import fs from "node:fs";
import JSON5 from "json5";
import {
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
 * `{{lastUserMessage}}` and `{{lastToolResult}}` in text are replaced from the request.
 */

export interface ScriptedToolCall {
  id?: string;
  name: string;
  arguments?: Record<string, unknown>;
}

export interface ScriptedTurn {
  text?: string | string[];
  thinking?: string;
  toolCalls?: ScriptedToolCall[];
  /** wait before the first chunk (ms) */
  delayMs?: number;
  /** wait between chunks (ms) */
  chunkDelayMs?: number;
  usage?: { input?: number; output?: number };
  stopReason?: StopReason;
  /** fail this call instead of answering */
  error?: { kind?: ProviderErrorKind; message: string; status?: number; afterChunks?: number };
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

export function validateScript(raw: unknown, where = "script"): Script {
  const obj = raw as Script;
  if (!obj || typeof obj !== "object" || !Array.isArray(obj.turns)) {
    throw new Error(`scripted provider: ${where}: expected { turns: [...] }`);
  }
  obj.turns.forEach((t, i) => {
    if (!t || typeof t !== "object") throw new Error(`scripted provider: ${where}: turns[${i}] must be an object`);
    for (const [j, c] of (t.toolCalls ?? []).entries()) {
      if (!c || typeof c.name !== "string") {
        throw new Error(`scripted provider: ${where}: turns[${i}].toolCalls[${j}].name must be a string`);
      }
    }
  });
  return obj;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
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
    if (m.role === role) return m.content;
  }
  return "";
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
    const failIfDue = () => {
      if (turn.error && chunks >= (turn.error.afterChunks ?? 0)) {
        throw new ProviderError(turn.error.kind ?? "server", `${this.id}: ${turn.error.message}`, {
          status: turn.error.status,
        });
      }
    };
    const gap = turn.chunkDelayMs ?? 0;
    failIfDue();
    if (turn.thinking) {
      yield { type: "thinking_delta", delta: turn.thinking };
      yield { type: "thinking_end", thinking: turn.thinking };
      chunks++;
    }
    const text = turn.text === undefined ? [] : Array.isArray(turn.text) ? turn.text : [turn.text];
    let outChars = 0;
    for (const raw of text) {
      if (chunks > 0) await sleep(gap, signal);
      failIfDue();
      const delta = raw
        .replaceAll("{{lastUserMessage}}", lastOf(request, "user"))
        .replaceAll("{{lastToolResult}}", lastOf(request, "toolResult"));
      outChars += delta.length;
      yield { type: "text_delta", delta };
      chunks++;
    }
    for (const call of turn.toolCalls ?? []) {
      if (chunks > 0) await sleep(gap, signal);
      failIfDue();
      const id = call.id ?? `call_${++this.toolCallCounter}`;
      yield { type: "tool_call", id, name: call.name, arguments: call.arguments ?? {} };
      chunks++;
    }
    if (turn.error) {
      throw new ProviderError(turn.error.kind ?? "server", `${this.id}: ${turn.error.message}`, {
        status: turn.error.status,
      });
    }
    const inputChars = (request.system?.length ?? 0) + JSON.stringify(request.messages).length;
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
