import type { PromptMode } from "../../prompt/system-prompt.js";
import type { RunStatus, UsageData } from "../../protocol/agent-events.js";
import type { AgentParams } from "../../protocol/params.js";
import type { SteeringPort } from "../loop.js";
import type { ReplyPayload } from "../reply.js";

export type { RunStatus };

/**
 * The run options a client may set on the wire, taken from the `agent` params schema itself, so a new run option is
 * added to the protocol schema and reaches the run without being restated anywhere.
 */
export type WireRunOptions = Pick<
  AgentParams,
  "model" | "thinking" | "timeout" | "lane" | "promptMode" | "extraSystemPrompt"
>;

/**
 * One run, as the queue hands it over: who, what, the wire options, and the ports the queue keeps for itself
 * (abort, steering, phase callbacks). It is passed down unchanged from intake to the loop.
 */
export interface RunSpec extends WireRunOptions {
  runId: string;
  sessionKey: string;
  agentId: string;
  message: string;
  signal?: AbortSignal;
  steering?: SteeringPort;
  /** called the moment the loop has returned: from then on the run can take no steering message */
  onLoopEnd?: () => void;
  /** called once the run holds its lanes (the queued phase is over) */
  onStarted?: (info: { startedAt: number; laneWaitMs: number }) => void;
}

/** The one record of how a run ended; the service turns it into the wire final, the CLI renders it. */
export interface RunResult {
  runId: string;
  sessionKey: string;
  status: RunStatus;
  stopReason: string;
  payloads: ReplyPayload[];
  usage: UsageData;
  startedAt: number;
  endedAt: number;
  durationMs: number;
  laneWaitMs: number;
  steps: number;
  /** provider/model that answered (after any fallback) */
  model: string;
  error?: { message: string; kind: string };
}

export type { PromptMode };
