/**
 * The `agent` event stream (SPEC 11/14): `{ runId, seq, stream, ts, sessionKey, data }`, with one `data` shape per
 * stream, declared here once. The runner emits them, the gateway broadcasts them, the CLI renders them; every side
 * reads the same discriminated unions, so a new field or phase is added in one place.
 */

export type AgentStream =
  | "lifecycle"
  | "assistant"
  | "thinking"
  | "message"
  | "block"
  | "tool"
  | "compaction"
  | "queue";

import type { EndedBy, Receipt, Usage } from "./run.js";

/** Token usage as reported on the wire (the run's Usage). */
export type UsageData = Usage;

export type { Receipt };

export type RunStatus = "ok" | "error" | "timeout" | "aborted";

/** When block streaming sends a message's blocks (SPEC 7): as the text streams, or when the message ends. */
export type BlockStreamingBreak = "text_end" | "message_end";

export type LifecycleData =
  /** `blockStreaming`: the run sends its reply as `block` events (absent: it does not) */
  | { phase: "start"; startedAt: number; model?: string; blockStreaming?: BlockStreamingBreak }
  | {
      phase: "end";
      startedAt: number;
      endedAt: number;
      status: "ok";
      stopReason: string;
      usage: UsageData;
      model?: string;
      /** the auth profile the run's last successful model call used (SPEC 23) */
      authProfile?: string;
      claimedBy?: string;
    }
  | {
      phase: "error";
      startedAt?: number;
      endedAt: number;
      status: Exclude<RunStatus, "ok">;
      stopReason: string;
      error?: string;
      kind?: string;
      model?: string;
      authProfile?: string;
      /** in-band control of another message ended it (`/stop`, an interrupt): by whom, with what */
      endedBy?: EndedBy;
    }
  /** a retryable model error: the call is tried again after delayMs (SPEC 16) */
  | { phase: "retry"; attempt: number; delayMs: number; reason: string; model: string }
  /** the run waits for the session write lock another process holds; then for the model (after the lock) */
  | { phase: "waiting"; for: "session_lock"; holderPid?: number }
  | { phase: "waiting"; for: "model"; model: string }
  /** exec wants a command approved (tools.exec.ask); `exec.approval.resolve` with this id answers it */
  | {
      phase: "waiting";
      for: "approval";
      approvalId: string;
      /** masked, like tool-call args in events (approvers get the exact command in exec.approval.requested) */
      command: string;
      expiresAtMs: number;
      /** why the policy asks, masked (e.g. `"rm -rf build" matches no tools.exec.allowlist pattern`) */
      reason?: string;
      /** "tool": a call of a tool that waits for approval (an MCP server's `approval`); absent: exec */
      kind?: "exec" | "tool";
      tool?: string;
      /** whether the run's exec is sandboxed, and why its policy asks (exec only) */
      sandbox?: { sandboxed: boolean; reason: string };
    }
  /** the approval the run waited for ended (answered, expired, or the run stopped waiting); the run goes on */
  | {
      phase: "resumed";
      for: "approval";
      approvalId: string;
      status: "allowed" | "denied" | "expired" | "cancelled";
      decision?: "allow-once" | "allow-always" | "deny";
    }
  /**
   * a `pause` budget is used up (limits.budgets, SPEC 25): the run waits before its next model call until
   * `budget.approval.resolve` with this id answers (allow-once, raise, deny) or it expires (denied)
   */
  | {
      phase: "waiting";
      for: "budget";
      approvalId: string;
      budget: string;
      window: string;
      unit: "usd" | "tokens";
      spent: number;
      limit: number;
      expiresAtMs: number;
    }
  /** the budget approval the run waited for ended; allowed: the run goes on, else it ends with budget_exceeded */
  | {
      phase: "resumed";
      for: "budget";
      approvalId: string;
      status: "allowed" | "denied" | "expired" | "cancelled";
      decision?: "allow-once" | "raise" | "deny";
    }
  /** the model failed for good; the run moves to the next model of the chain (SPEC 16) */
  | { phase: "fallback"; from: string; to: string; reason: string }
  /**
   * the run moved to another auth profile of the same provider (SPEC 23): `from` rate limited, out of credit or
   * refused (`reason`: rate_limit, billing, auth); profile ids only, never a key
   */
  | { phase: "auth_rotate"; from: string; to: string; reason: string };

/**
 * One piece of the answer. `delta` is on every event; the answer is the deltas joined. `text` (the current assistant
 * message so far, for OpenClaw clients that read it) is a checkpoint, not on every event, so a long reply costs
 * O(n) wire bytes rather than O(n²): it is on the first delta of each assistant message, on a `replace` delta, and
 * whenever the message has grown by at least `max(TEXT_CHECKPOINT_MIN_CHARS, a quarter of its length at the last
 * checkpoint)` since the last event that carried it (so the checkpoints of a message add up to at most about 5 × its
 * length). A client that joins mid-stream shows `text` from the next checkpoint on and appends deltas to it.
 * Events the runner emits in one piece (a slash-command reply, a claimed reply) always carry it.
 */
export interface AssistantData {
  /** the text of the current assistant message so far, when this event is a checkpoint (see above) */
  text?: string;
  delta: string;
  /** the text streamed before this event was thrown away (a retry or compaction restarted the answer) */
  replace?: boolean;
}

/**
 * The model's reasoning (stream `thinking`, the name OpenClaw clients read), sent only when the run's reasoning
 * level asks for it. `stream`: one event per delta while it is produced; `text`, the block so far, rides only on
 * checkpoints (the first delta of each block, a `replace`, then as the block grows: the rule of `AssistantData.text`),
 * so long reasoning costs O(n) bytes. `on`: one event when a thinking block is complete, `text` and `delta` both the
 * whole block. `off`: none.
 */
export interface ThinkingData {
  text?: string;
  delta: string;
  /** the reasoning streamed before this event was thrown away (a retry, compaction or fallback restarted it) */
  replace?: boolean;
}

/** Text the model sent to the user in the middle of a run with the `message` tool (after message_sending). */
export interface MessageData {
  text: string;
  toolCallId: string;
}

/**
 * One reply block (block streaming, SPEC 7): 800–1,200 characters of the assistant's text, cut at a paragraph,
 * newline, sentence or space, with a code fence split across blocks closed and reopened so each renders alone.
 * `index` counts the run's blocks from 0. `replace`: the blocks sent since the last complete assistant message
 * belonged to an attempt that was thrown away (a retry, compaction or fallback); they are void.
 */
export interface BlockData {
  index: number;
  text: string;
  replace?: boolean;
}

/** An image in a tool result as events, logs and the audit show it: its size, never its bytes. */
export interface OmittedImage {
  type: "image";
  mimeType: string;
  /** decoded size in bytes */
  bytes: number;
  width?: number;
  height?: number;
  omitted: true;
}

export type ToolData =
  | { phase: "start"; name: string; toolCallId: string; args: unknown }
  | { phase: "update"; name: string; toolCallId: string; partialResult: string }
  | {
      phase: "result";
      name: string;
      toolCallId: string;
      isError: boolean;
      /** the result's text */
      result: string;
      /** the result's images, by size only (the model got them; clients and logs never get the base64) */
      images?: OmittedImage[];
      skipped?: "steer" | "blocked" | "aborted";
    };

export type CompactionReason = "threshold" | "overflow" | "manual";

export type CompactionData =
  | { phase: "start"; reason: CompactionReason; tokensBefore: number }
  | {
      phase: "end";
      reason: CompactionReason;
      completed: boolean;
      willRetry: boolean;
      tokensBefore: number;
      tokensAfter: number;
      outcome: string;
    };

export interface QueueData {
  receipt: Receipt;
}

export interface AgentEventData {
  lifecycle: LifecycleData;
  assistant: AssistantData;
  thinking: ThinkingData;
  message: MessageData;
  tool: ToolData;
  compaction: CompactionData;
  queue: QueueData;
  block: BlockData;
}

/** One event of one stream; `AgentEvent` is the union over all streams, narrowed by `stream`. */
export type AgentEventOf<S extends AgentStream> = {
  runId: string;
  seq: number;
  stream: S;
  ts: number;
  sessionKey: string;
  data: AgentEventData[S];
};

export type AgentEvent = { [S in AgentStream]: AgentEventOf<S> }[AgentStream];
