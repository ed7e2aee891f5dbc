import type { LoopgateConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { AgentEventBus } from "../infra/events.js";
import type { AgentAccepted } from "../protocol/payloads.js";
import type { AgentFinal, AgentRequest, ReplyPayload, Usage } from "../protocol/run.js";
import type { UserMessage } from "../providers/types.js";
import type { RunStatus, Store } from "../storage/types.js";
import type { QueueMode } from "./modes.js";

export type QueueConfig = LoopgateConfig["messages"]["queue"];

/** A request whose agent id is resolved (the session key names the agent). */
export type ResolvedRequest = AgentRequest & { agentId: string };

/** What `accept` answers: the wire's accepted answer, plus whether the idempotency key named an existing run. */
export type AcceptedRun = Required<AgentAccepted> & {
  /** true when the idempotency key named a run that already existed: nothing new was started */
  existing: boolean;
};

/** Lets a running turn take messages steered into it, before its next model call. */
export interface TurnSteering {
  /** true when a user message is waiting to be injected */
  pending(): boolean;
  /** takes the waiting messages (they become part of this run) */
  take(): UserMessage[];
}

/** What the queue asks the run port to do: one turn of one session. */
export interface TurnSpec {
  runId: string;
  sessionKey: string;
  agentId: string;
  message: string;
  model?: string;
  thinking?: AgentRequest["thinking"];
  /** seconds; 0 = unlimited */
  timeoutSeconds?: number;
  lane?: string;
  promptMode?: AgentRequest["promptMode"];
  extraSystemPrompt?: string;
  signal: AbortSignal;
  steering: TurnSteering;
  /** the loop will take no more steered messages */
  onLoopEnd: () => void;
  /** the turn got its lanes and is running */
  onStarted: (info: { startedAt: number; laneWaitMs: number }) => void;
}

/** How a turn ended, as the run port reports it. */
export interface TurnOutcome {
  runId: string;
  sessionKey: string;
  status: RunStatus;
  stopReason: string;
  payloads: ReplyPayload[];
  usage: Usage;
  startedAt: number;
  endedAt: number;
  durationMs: number;
  laneWaitMs: number;
  steps: number;
  model: string;
  error?: { message: string; kind: string };
}

/** Everything the session queue needs from outside; the run itself is reached only through `runTurn`. */
export interface QueueDeps {
  store: Store;
  bus: AgentEventBus;
  clock: Clock;
  config(): QueueConfig;
  /** Runs one turn. Never rejects by contract; the queue still records a rejection as a failed run. */
  runTurn(spec: TurnSpec): Promise<TurnOutcome>;
  /** A message that is a command may choose its own mode (e.g. `/stop` is always an interrupt). */
  commandMode?(message: string): QueueMode | undefined;
  newId(): string;
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
}

/** One accepted message that has not ended yet. */
export interface LiveRun {
  runId: string;
  sessionKey: string;
  req: ResolvedRequest;
  mode: QueueMode;
  /** pending: waiting in the session queue; queued: in lanes; running: holds its lanes; merged: inside another run */
  phase: "pending" | "queued" | "running" | "merged";
  controller?: AbortController;
  done: Deferred<AgentFinal>;
  acceptedAt: number;
}

export interface ActiveTurn {
  host: LiveRun;
  /** messages steered into this turn, waiting for the loop to take them */
  steer: LiveRun[];
  /** collected/steered runs whose outcome is the host's */
  merged: LiveRun[];
  steerable: boolean;
}

export interface SessionState {
  key: string;
  active?: ActiveTurn;
  pending: LiveRun[];
  overflow: { count: number; summaries: string[] };
  lastEnqueueAt: number;
  timer?: unknown;
  /** interrupt mode: the next turn starts without the quiet window */
  immediate: boolean;
}

/** The queue's shared state; the functions in this folder each take it and do one thing. */
export interface QueueContext {
  readonly deps: QueueDeps;
  readonly live: Map<string, LiveRun>;
  readonly sessions: Map<string, SessionState>;
  draining: boolean;
  /** Sets the session's drain timer; wired by SessionQueue so the turn and intake code need not import it. */
  schedule(s: SessionState): void;
}
