/**
 * The `agent` event stream (SPEC 11/14): `{ runId, seq, stream, ts, sessionKey, data }`, with one `data` shape per
 * stream, declared here once. The runner emits them, the gateway broadcasts them, the CLI renders them; every side
 * reads the same discriminated unions, so a new field or phase is added in one place.
 */

export type AgentStream = "lifecycle" | "assistant" | "tool" | "compaction" | "queue";

import type { Receipt, Usage } from "./run.js";

/** Token usage as reported on the wire (the run's Usage). */
export type UsageData = Usage;

export type { Receipt };

export type RunStatus = "ok" | "error" | "timeout" | "aborted";

export type LifecycleData =
  | { phase: "start"; startedAt: number; model?: string }
  | {
      phase: "end";
      startedAt: number;
      endedAt: number;
      status: "ok";
      stopReason: string;
      usage: UsageData;
      model?: string;
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
    }
  /** a retryable model error: the call is tried again after delayMs (SPEC 16) */
  | { phase: "retry"; attempt: number; delayMs: number; reason: string; model: string }
  /** the run waits for the session write lock another process holds; then for the model (after the lock) */
  | { phase: "waiting"; for: "session_lock"; holderPid?: number }
  | { phase: "waiting"; for: "model"; model: string }
  /** the model failed for good; the run moves to the next model of the chain (SPEC 16) */
  | { phase: "fallback"; from: string; to: string; reason: string };

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

export type ToolData =
  | { phase: "start"; name: string; toolCallId: string; args: unknown }
  | { phase: "update"; name: string; toolCallId: string; partialResult: string }
  | {
      phase: "result";
      name: string;
      toolCallId: string;
      isError: boolean;
      result: string;
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
  tool: ToolData;
  compaction: CompactionData;
  queue: QueueData;
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
