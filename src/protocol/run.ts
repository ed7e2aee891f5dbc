/**
 * The run as it crosses the wire: what a client sends to start one, the receipt it gets back, the final result and
 * what `agent.wait` reports. The agent runtime and the queue produce these shapes; they are declared here so that
 * a client (and the CLI rendering a final that came over the wire) needs nothing from the runtime.
 */
import type { AgentParams } from "./params.js";

/**
 * The `agent` RPC params (SPEC 14), also what the CLI and embedding apps pass in-process. `queueMode` is a plain
 * string here because in-process callers do not go through the RPC schema: the queue checks it itself and refuses
 * an unknown mode with an error naming the param.
 */
export type AgentRequest = Omit<AgentParams, "queueMode"> & { queueMode?: string };

/**
 * Who ended a run that was not theirs with in-band control (SPEC 21): the actor of the commanding message (a client
 * id, "device:<id>") and the command (`/stop`, `/new`, `/reset`, or `queueMode "interrupt"`).
 */
export interface EndedBy {
  actor: string;
  command: string;
}

/** What happened to an accepted message. Every accepted message gets one, in the RPC answer and as an event. */
export type Receipt =
  | { kind: "started" }
  /**
   * This message (`/stop`, or queueMode "interrupt") aborted the session's running turn (`stopped`) and dropped what
   * waited (`dropped`), then runs next; `summary` says so in words ("stopped 1 run, dropped 2 queued").
   */
  | { kind: "interrupted"; command: string; stopped: string[]; dropped: string[]; summary: string }
  | { kind: "steered"; into: string }
  | { kind: "queued"; position: number; mode: "followup" | "collect" }
  | { kind: "collected"; into: string; count: number }
  | { kind: "dropped"; reason: string }
  | { kind: "rejected"; reason: string };

export type WireStatus = "ok" | "error" | "timeout";

/** Token counts of a run (or one model call). */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  total: number;
}

/** One block of a run's reply. */
export interface ReplyPayload {
  text: string;
  kind?: "reasoning" | "tool_summary" | "error";
}

export interface AgentFinal {
  runId: string;
  status: WireStatus;
  summary: "completed" | "failed" | "aborted";
  stopReason?: string;
  result: {
    payloads: ReplyPayload[];
    meta: {
      durationMs: number;
      usage: Usage;
      model?: string;
      /** the model's display name (config `name`) */
      modelName?: string;
      /** estimated USD, from the usage and the model's configured `cost` per million tokens */
      costUsd?: number;
      /** the auth profile ("provider:name", never a key) the run's last successful model call used */
      authProfile?: string;
      laneWaitMs?: number;
      steps?: number;
    };
  };
  error?: string;
  /** set when this message was steered or collected into another run: that run's outcome is this one's */
  mergedInto?: string;
  /** set when another message's in-band control (`/stop`, an interrupt) ended this run: by whom, with what */
  endedBy?: EndedBy;
}

export interface WaitResult {
  runId: string;
  status: WireStatus | "pending";
  startedAt?: number;
  endedAt?: number;
  error?: string;
  stopReason?: string;
  /** provider/model that answered (after any fallback); absent while pending */
  model?: string;
  /** set when another message's in-band control (`/stop`, an interrupt) ended this run: by whom, with what */
  endedBy?: EndedBy;
}
