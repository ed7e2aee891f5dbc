import {
  type AssistantBlock,
  type AssistantMessage,
  addUsage,
  type ChatMessage,
  contentImages,
  contentText,
  emptyUsage,
  type ImageBlock,
  type MessageContent,
  type ModelProvider,
  type ModelStreamEvent,
  mapContentText,
  type ProviderError,
  type StopReason,
  type ThinkingLevel,
  type ToolCallBlock,
  type ToolResultMessage,
  type ToolSpec,
  type Usage,
  type UserMessage,
} from "../providers/types.js";
import type { Tool, ToolContext } from "../tools/types.js";
import { checkToolArgs } from "../tools/validate.js";

/**
 * The inner agent loop: model turn → tool calls → tool results → next model turn, until a final answer, the step
 * limit, an abort or an error. It is a pure async generator: it yields typed events and returns an outcome, and it
 * reaches the world only through the ports it is given (provider, tools, steering, hooks, signal). It never
 * touches storage, sockets or timers — the runner persists and publishes what it yields.
 *
 * Invariant: every tool call the loop yields in an assistant message is followed by exactly one tool result
 * message (real, blocked, skipped or aborted), so a transcript never holds an unanswered call.
 */

export const SKIPPED_FOR_STEER = "skipped: a new user message arrived";

export type LoopEvent =
  | { type: "model_start"; step: number }
  | { type: "text_delta"; delta: string; text: string }
  | { type: "thinking_delta"; delta: string }
  /** a thinking block is complete: its whole text */
  | { type: "thinking_end"; thinking: string }
  | { type: "model_end"; step: number; usage: Usage; stopReason: StopReason }
  /** a message to append to the transcript, in order */
  | { type: "message"; message: ChatMessage }
  | { type: "tool_start"; toolCallId: string; name: string; args: Record<string, unknown> }
  | { type: "tool_update"; toolCallId: string; name: string; partial: string }
  | {
      type: "tool_end";
      toolCallId: string;
      name: string;
      isError: boolean;
      /** the result's text (image parts left out) */
      result: string;
      /** the result's image parts; events show their metadata only */
      images?: ImageBlock[];
      /** skipped (steer), blocked (hook) or aborted — the tool never ran */
      skipped?: "steer" | "blocked" | "aborted";
    }
  | { type: "steered"; messages: UserMessage[] };

export type LoopStopReason = "stop" | "length" | "max_steps" | "aborted" | "error";

export interface LoopOutcome {
  stopReason: LoopStopReason;
  /** set when stopReason is "error" */
  error?: ProviderError | Error;
  usage: Usage;
  steps: number;
  /** text of the last assistant message (the reply before shaping) */
  finalText: string;
  toolErrors: Array<{ name: string; message: string }>;
  /** the context as it stands at the end: input messages (after transformContext) plus every complete message added */
  messages: ChatMessage[];
}

export interface SteeringPort {
  /** true when a user message is waiting to be injected */
  pending(): boolean;
  /** takes the waiting messages (they become part of this run) */
  take(): UserMessage[];
}

export interface ToolCallDecision {
  block?: boolean;
  blockReason?: string;
  params?: Record<string, unknown>;
}

export interface LoopPorts {
  provider: ModelProvider;
  tools: ReadonlyMap<string, Tool>;
  /** tools that exist but this run's allow/deny lists withhold: a call to one is told so, not "unknown tool" */
  withheldTools?: ReadonlySet<string>;
  signal: AbortSignal;
  toolContext: Omit<ToolContext, "signal" | "onUpdate" | "toolCallId">;
  steering?: SteeringPort;
  beforeToolCall?: (call: ToolCallBlock) => Promise<ToolCallDecision | undefined> | ToolCallDecision | undefined;
  afterToolCall?: (call: ToolCallBlock, result: ToolResultMessage) => void;
  /** what goes back into the model context (caps, applied to each text part); events get the raw text and sanitize it themselves */
  resultForModel?: (text: string) => string;
  /**
   * Called before every model call with the context about to be sent; what it returns is sent instead and becomes
   * the loop's context from then on (compaction lives behind this port). Throwing ends the loop with that error.
   */
  transformContext?: (messages: ChatMessage[], info: ContextInfo) => Promise<ChatMessage[]> | ChatMessage[];
}

/** What the loop knows about the previous model call when it asks transformContext about the next one. */
export interface ContextInfo {
  step: number;
  /** usage the provider reported for the previous call of this loop, and how many messages that call sent */
  previous?: { usage: Usage; sentMessages: number };
}

export interface LoopInput {
  model: string;
  system?: string;
  /** history including the new user message */
  messages: ChatMessage[];
  maxSteps: number;
  thinking?: ThinkingLevel;
  maxTokens?: number;
}

/** Wakes a waiting consumer; a wake with nobody waiting is remembered, so no wake-up is ever lost. */
class Notifier {
  private resolve?: () => void;
  private flagged = false;
  wake(): void {
    if (this.resolve) {
      const r = this.resolve;
      this.resolve = undefined;
      r();
    } else this.flagged = true;
  }
  wait(): Promise<void> {
    if (this.flagged) {
      this.flagged = false;
      return Promise.resolve();
    }
    return new Promise((r) => {
      this.resolve = r;
    });
  }
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

function abortReasonText(signal: AbortSignal): string {
  const r = signal.reason as { message?: string } | string | undefined;
  if (typeof r === "string") return r;
  return r?.message ?? "aborted";
}

/** What one model call produced (or how it failed). */
interface ModelTurn {
  text: string;
  thinking: string;
  thinkingSignature?: string;
  calls: ToolCallBlock[];
  /** calls whose arguments could not be parsed, by id: answered with an error, never run */
  invalid: Map<string, string>;
  stopReason: StopReason;
  usage: Usage;
  failure?: Error;
}

/** Mutable state of one loop run; `outcome` reads it when the loop returns. */
interface LoopState {
  messages: ChatMessage[];
  previous?: ContextInfo["previous"];
  usage: Usage;
  steps: number;
  finalText: string;
  toolErrors: LoopOutcome["toolErrors"];
}

export async function* runAgentLoop(input: LoopInput, ports: LoopPorts): AsyncGenerator<LoopEvent, LoopOutcome> {
  const st: LoopState = { messages: [...input.messages], usage: emptyUsage(), steps: 0, finalText: "", toolErrors: [] };
  const specs: ToolSpec[] = [...ports.tools.values()].map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters,
  }));
  const outcome = (stopReason: LoopStopReason, error?: Error): LoopOutcome => ({ stopReason, error, ...st });

  while (true) {
    if (ports.signal.aborted) return outcome("aborted");
    if (st.steps >= input.maxSteps) return outcome("max_steps");
    yield* takeSteering(st, ports);
    if (ports.transformContext) {
      try {
        st.messages = [...(await ports.transformContext(st.messages, { step: st.steps + 1, previous: st.previous }))];
      } catch (err) {
        if (ports.signal.aborted) return outcome("aborted");
        return outcome("error", err instanceof Error ? err : new Error(String(err)));
      }
    }
    st.steps++;
    yield { type: "model_start", step: st.steps };
    const sentMessages = st.messages.length;
    // the model call is streamed here, not through a generator of its own: a `yield*` layer cost every delta a
    // promise, an iterator result and a hop (~260 B per streamed token, bench/stream-allocations.mjs)
    const turn = newTurn();
    try {
      const stream = ports.provider.stream({
        model: input.model,
        system: input.system,
        messages: st.messages,
        tools: specs,
        thinking: input.thinking,
        maxTokens: input.maxTokens,
        signal: ports.signal,
      });
      for await (const ev of stream) {
        const out = foldModelEvent(turn, ev);
        if (out) yield out;
      }
    } catch (err) {
      // a thrown error is the call's failure, as is one thrown into the loop while it waits at a delta
      turn.failure = err instanceof Error ? err : new Error(String(err));
    }
    st.usage = addUsage(st.usage, turn.usage);
    st.previous = { usage: turn.usage, sentMessages };
    const modelRef = `${ports.provider.id}/${input.model}`;
    if (turn.failure || ports.signal.aborted) {
      const aborted = ports.signal.aborted;
      yield* endFailedCall(st, turn, aborted, modelRef);
      return aborted ? outcome("aborted") : outcome("error", turn.failure);
    }
    const assistant = assistantMessage(turn, modelRef);
    st.messages.push(assistant);
    st.finalText = turn.text;
    yield { type: "message", message: assistant };
    yield { type: "model_end", step: st.steps, usage: turn.usage, stopReason: assistant.stopReason ?? "stop" };
    if (turn.calls.length === 0) return outcome(turn.stopReason === "length" ? "length" : "stop");
    yield* runTools(st, turn, ports);
  }
}

/** Steering messages that arrived during the previous tool batch become visible before the next model call. */
async function* takeSteering(st: LoopState, ports: LoopPorts): AsyncGenerator<LoopEvent> {
  if (!ports.steering?.pending()) return;
  const steered = ports.steering.take();
  if (!steered.length) return;
  yield { type: "steered", messages: steered };
  for (const m of steered) {
    st.messages.push(m);
    yield { type: "message", message: m };
  }
}

function newTurn(): ModelTurn {
  return { text: "", thinking: "", calls: [], invalid: new Map(), stopReason: "stop", usage: emptyUsage() };
}

/** Folds one event of a streamed model call into `turn`; returns the loop event to yield for it, if any. */
function foldModelEvent(turn: ModelTurn, ev: ModelStreamEvent): LoopEvent | undefined {
  switch (ev.type) {
    case "text_delta":
      turn.text += ev.delta;
      return { type: "text_delta", delta: ev.delta, text: turn.text };
    case "thinking_delta":
      turn.thinking += ev.delta;
      return { type: "thinking_delta", delta: ev.delta };
    case "thinking_end":
      turn.thinking = ev.thinking || turn.thinking;
      turn.thinkingSignature = ev.signature;
      return { type: "thinking_end", thinking: turn.thinking };
    case "tool_call":
      turn.calls.push({ type: "toolCall", id: ev.id, name: ev.name, arguments: ev.arguments });
      if (ev.invalid) turn.invalid.set(ev.id, ev.invalid);
      return undefined;
    case "done":
      turn.stopReason = ev.stopReason;
      turn.usage = ev.usage;
      return undefined;
  }
  return undefined;
}

/** Keeps what the user already saw streamed, but never a half-formed tool call: calls are dropped. */
async function* endFailedCall(
  st: LoopState,
  turn: ModelTurn,
  aborted: boolean,
  modelRef: string,
): AsyncGenerator<LoopEvent> {
  const stopReason = aborted ? "aborted" : "error";
  if (turn.text) {
    const partial: AssistantMessage = {
      role: "assistant",
      content: [{ type: "text", text: turn.text }],
      stopReason,
      usage: turn.usage,
      model: modelRef,
    };
    st.finalText = turn.text;
    yield { type: "message", message: partial };
  }
  yield { type: "model_end", step: st.steps, usage: turn.usage, stopReason };
}

function assistantMessage(turn: ModelTurn, modelRef: string): AssistantMessage {
  const content: AssistantBlock[] = [];
  if (turn.thinking) content.push({ type: "thinking", thinking: turn.thinking, signature: turn.thinkingSignature });
  if (turn.text) content.push({ type: "text", text: turn.text });
  content.push(...turn.calls);
  return {
    role: "assistant",
    content,
    stopReason: turn.calls.length ? "tool_calls" : turn.stopReason,
    usage: turn.usage,
    model: modelRef,
  };
}

/**
 * Tool execution: consecutive parallel-safe calls run together; a sequential call runs alone. Before each batch, a
 * waiting steering message skips the rest of this turn's calls (the running tool is never cut).
 */
async function* runTools(st: LoopState, turn: ModelTurn, ports: LoopPorts): AsyncGenerator<LoopEvent> {
  const { calls } = turn;
  const results: ToolResultMessage[] = new Array(calls.length);
  let i = 0;
  while (i < calls.length) {
    if (ports.signal.aborted || ports.steering?.pending()) {
      yield* skipRest(calls, i, results, ports);
      break;
    }
    let end = i + 1;
    if (ports.tools.get(calls[i].name)?.concurrency !== "sequential") {
      while (end < calls.length && ports.tools.get(calls[end].name)?.concurrency !== "sequential") end++;
    }
    yield* runBatch(calls, i, end, results, { ...ports, invalid: turn.invalid }, st.toolErrors);
    i = end;
  }
  for (const r of results) {
    st.messages.push(r);
    yield { type: "message", message: r };
  }
}

/** Every call from `from` on gets a synthetic result: skipped for a steering message, or aborted. */
async function* skipRest(
  calls: ToolCallBlock[],
  from: number,
  results: ToolResultMessage[],
  ports: LoopPorts,
): AsyncGenerator<LoopEvent> {
  const reason = ports.signal.aborted ? "aborted" : "steer";
  for (let i = from; i < calls.length; i++) {
    const call = calls[i];
    const content = reason === "steer" ? SKIPPED_FOR_STEER : `aborted: ${abortReasonText(ports.signal)}`;
    results[i] = { role: "toolResult", toolCallId: call.id, toolName: call.name, content, isError: true };
    yield { type: "tool_end", toolCallId: call.id, name: call.name, isError: true, result: content, skipped: reason };
  }
}

type BatchPorts = LoopPorts & { invalid: ReadonlyMap<string, string> };

async function* runBatch(
  calls: ToolCallBlock[],
  from: number,
  to: number,
  results: ToolResultMessage[],
  ports: BatchPorts,
  toolErrors: LoopOutcome["toolErrors"],
): AsyncGenerator<LoopEvent> {
  const queue: LoopEvent[] = [];
  const notifier = new Notifier();
  const push = (ev: LoopEvent) => {
    queue.push(ev);
    notifier.wake();
  };
  let remaining = to - from;
  for (let i = from; i < to; i++) {
    void executeOne(calls[i], ports, push).then((result) => {
      results[i] = result;
      if (result.isError) toolErrors.push({ name: result.toolName, message: contentText(result.content) });
      remaining--;
      notifier.wake();
    });
  }
  while (true) {
    while (queue.length) yield queue.shift()!;
    if (remaining === 0) break;
    await notifier.wait();
  }
}

/** Runs one tool call to a result message; never throws (a throwing tool becomes an error result). */
async function executeOne(
  call: ToolCallBlock,
  ports: BatchPorts,
  push: (ev: LoopEvent) => void,
): Promise<ToolResultMessage> {
  const done = (content: MessageContent, isError: boolean, skipped?: "blocked"): ToolResultMessage => {
    const images = contentImages(content);
    push({
      type: "tool_end",
      toolCallId: call.id,
      name: call.name,
      isError,
      result: contentText(content),
      ...(images.length > 0 ? { images } : {}),
      skipped,
    });
    const cap = ports.resultForModel;
    const forModel = cap ? mapContentText(content, cap) : content;
    const message: ToolResultMessage = {
      role: "toolResult",
      toolCallId: call.id,
      toolName: call.name,
      content: forModel,
      isError,
    };
    ports.afterToolCall?.(call, message);
    return message;
  };
  let args = call.arguments;
  push({ type: "tool_start", toolCallId: call.id, name: call.name, args });
  const invalid = ports.invalid.get(call.id);
  if (invalid) return done(`${invalid}. Issue the call again with complete arguments.`, true);
  const tool = ports.tools.get(call.name);
  if (!tool) {
    if (ports.withheldTools?.has(call.name)) return done(`tool ${call.name} is not available to this agent`, true);
    return done(`unknown tool "${call.name}"`, true);
  }
  try {
    if (ports.beforeToolCall) {
      const decision = await ports.beforeToolCall({ ...call, arguments: args });
      if (decision?.block)
        return done(`blocked: ${decision.blockReason ?? "a plugin blocked this tool call"}`, true, "blocked");
      if (decision?.params) args = decision.params;
    }
    // checked after before_tool_call, so arguments a plugin rewrote are held to the schema too
    // awaited only when it is a promise (a built-in's zod schema still loading), so other calls keep their timing
    let checked = checkToolArgs(tool, args);
    if (checked instanceof Promise) checked = await checked;
    if (!checked.ok) return done(checked.error, true);
    const out = await tool.execute(checked.args, {
      ...ports.toolContext,
      toolCallId: call.id,
      signal: ports.signal,
      onUpdate: (partial) => push({ type: "tool_update", toolCallId: call.id, name: call.name, partial }),
    });
    return done(out.content, out.isError === true);
  } catch (err) {
    return done(errorMessage(err), true);
  }
}
