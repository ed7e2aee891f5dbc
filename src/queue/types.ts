import type { LoopgateConfig } from "../config/schema.js";
import type { EventBusPort } from "../events/bus-port.js";
import type { Clock } from "../infra/clock.js";
import type { KeyedSerial } from "../infra/keyed-serial.js";
import type { RunStatus as RunEndStatus } from "../protocol/agent-events.js";
import type { AgentParams } from "../protocol/params.js";
import type { AgentAccepted } from "../protocol/payloads.js";
import type { AgentFinal, AgentRequest, EndedBy, Receipt, ReplyPayload, Usage } from "../protocol/run.js";
import type { ImageBlock, UserMessage } from "../providers/types.js";
import type { SessionRecord, Store, TranscriptRow } from "../storage/types.js";
import type { QueueMode } from "./modes.js";
import type { UnrecordedEnds } from "./unrecorded-ends.js";

export type QueueConfig = LoopgateConfig["messages"]["queue"];

/** Who started a run; the audit ledger records it with each of the run's rows, and the run record keeps it. */
export interface RunOrigin {
  /** who started the run: a client id, "device:<id>", "cli", "cron:<jobId>" */
  actor: string;
  /**
   * false: the sender's token is denied in-band control (`gateway.auth.tokens[].commands`), so a session or
   * configured queue mode of "interrupt" queues its message as a followup instead (only at accept; not stored)
   */
  control?: false;
  /**
   * the identity of the token the sender connected with (gateway/token-grants.ts `identity`): the cost ledger's and
   * the token budgets' key; stored with the run, so a run recovered or claimed by another node keeps it
   */
  token?: string;
}

/** A request whose agent id is resolved (the session key names the agent). */
export type ResolvedRequest = AgentRequest & { agentId: string };

/** What `accept` answers: the wire's accepted answer, plus whether the idempotency key named an existing run. */
export type AcceptedRun = Required<AgentAccepted> & {
  /** true when the idempotency key named a run that already existed: nothing new was started */
  existing: boolean;
  /** true when this message created its session (it had no row before) */
  newSession?: boolean;
};

/** What intake found in its one read, shown to the caller's checks before anything is stored (IntakeGate). */
export interface IntakeSight {
  /** the session the message goes to, resolved once */
  sessionKey: string;
  /** the run this idempotency key already names: nothing new will be stored, its first answer is given */
  existing?: { runId: string; sessionKey: string };
  /** no session row yet: this message will create it */
  newSession: boolean;
}

/**
 * A caller's checks between intake's read and its durable write (the gateway's access and spend rules): throwing
 * refuses the message with nothing stored; a request returned is stored instead of the one given (attachments made
 * ready). Not called back for an existing run's repeat with a request to store.
 */
export type IntakeGate = (sight: IntakeSight) => Promise<AgentRequest | undefined> | AgentRequest | undefined;

/** Lets a running turn take messages steered into it, before its next model call. */
export interface TurnSteering {
  /** true when a user message is waiting to be injected */
  pending(): boolean;
  /** takes the waiting messages (they become part of this run) */
  take(): UserMessage[];
}

/**
 * The run options a client sets on the wire, named once: the type is picked from the `agent` params schema, so
 * adding a run option means adding its name here (and the field to the schema); it then reaches the run unchanged.
 */
export const WIRE_RUN_OPTIONS = [
  "model",
  "thinking",
  "reasoningLevel",
  "verboseLevel",
  "timeout",
  "lane",
  "promptMode",
  "extraSystemPrompt",
  "blockStreaming",
  "authProfile",
] as const;
export type WireRunOptions = Pick<AgentParams, (typeof WIRE_RUN_OPTIONS)[number]>;

export function wireRunOptions(req: WireRunOptions): WireRunOptions {
  const out: Record<string, unknown> = {};
  for (const key of WIRE_RUN_OPTIONS) if (req[key] !== undefined) out[key] = req[key];
  return out as WireRunOptions;
}

/** One turn of one session, as the queue hands it to the run: defined once, passed down unchanged to the loop. */
export interface RunSpec extends WireRunOptions {
  runId: string;
  sessionKey: string;
  agentId: string;
  message: string;
  /** the identity of the token whose client sent the turn's message (RunOrigin.token); absent for local runs */
  token?: string;
  /** the images attached to the message(s) of this turn (a collected turn: every collected message's) */
  images?: ImageBlock[];
  signal?: AbortSignal;
  /** fires when stuck-session recovery releases the turn's session: the run gives up its lanes at once */
  releaseLanes?: AbortSignal;
  steering?: TurnSteering;
  /**
   * The session's row as read where the run was launched, at once, from what it read anyway (an adopted input's
   * read on Postgres): the run starts from it instead of reading the row again. Absent: the run reads it.
   */
  session?: SessionRecord;
  /** the loop will take no more steered messages */
  onLoopEnd?: () => void;
  /** the turn got its lanes and is running; the run waits for the returned promise before its start event */
  onStarted?: (info: { startedAt: number; laneWaitMs: number }) => void | Promise<void>;
  /**
   * Writes the turn's answer (`rows`) and its end (from `outcome`) in one commit, under the session's write lock,
   * before the terminal event; resolves to the stored rows, or undefined when the end is not this run's to write
   * (the rows are then written alone, and the end as before). A run without it writes its answer when it comes.
   */
  recordEnd?: (
    outcome: RunResult,
    rows: Array<Omit<TranscriptRow, "seq" | "generation">>,
  ) => Promise<TranscriptRow[] | undefined>;
}

/** How a run ended: the one record the queue stores as the final, the CLI renders, agent.wait reports. */
export interface RunResult {
  runId: string;
  sessionKey: string;
  status: RunEndStatus;
  stopReason: string;
  payloads: ReplyPayload[];
  usage: Usage;
  startedAt: number;
  endedAt: number;
  durationMs: number;
  laneWaitMs: number;
  steps: number;
  /** provider/model that answered (after any fallback) */
  model: string;
  /** that model's display name (config `name`), when it has one */
  modelName?: string;
  /** estimated USD from the usage and that model's configured `cost` (absent without one) */
  costUsd?: number;
  /** the auth profile ("provider:name") the run's last successful model call used (SPEC 23) */
  authProfile?: string;
  error?: { message: string; kind: string };
  /** another message's in-band control (`/stop`, an interrupt) aborted it: by whom, with what */
  endedBy?: EndedBy;
}

/** Everything the session queue needs from outside; the run itself is reached only through `runTurn`. */
export interface QueueDeps {
  store: Store;
  bus: EventBusPort;
  clock: Clock;
  config(): QueueConfig;
  /** Runs one turn. Never rejects by contract; the queue still records a rejection as a failed run. */
  runTurn(spec: RunSpec): Promise<RunResult>;
  /** The agent a request without agentId belongs to (agents.list[].default, else the first, else "main"). */
  defaultAgentId(): string;
  /** Why `agentId` cannot take messages (it is not configured), or undefined when it can. */
  agentProblem(agentId: string): string | undefined;
  /** A requested model (alias, bare id or "provider/model") as "provider/model"; throws when it cannot be used. */
  chooseModel?(input: string): string;
  /** Why a run's `authProfile` cannot be used (no such auth profile), or undefined when it can. */
  authProfileProblem?(id: string): string | undefined;
  /**
   * A message arrived and was accepted (stored, routed): the message_received hooks fire here, once per message,
   * whether it starts a turn, is steered into one, queued or collected. Must not throw.
   */
  onReceived?(message: { runId: string; sessionKey: string; agentId: string; message: string }): void;
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
  /** when its turn started (set with phase "running", or when it was steered or collected into a running turn) */
  startedAt?: number;
  /** who started it (AgentService.accept's origin) */
  origin?: RunOrigin;
  /** its current receipt (a repeated idempotency key gets it while the run is live) */
  receipt?: Receipt;
  /** settles once its run record is stored, for a run the queue made itself (an overflow notice): it runs after */
  committed?: Promise<void>;
  /**
   * Set only while the run is being adopted: the session's row read with it, for a turn launched there and then
   * (RunSpec.session). Cleared after, so a turn that starts later reads the row as it is then.
   */
  adoptedSession?: SessionRecord;
}

export interface ActiveTurn {
  host: LiveRun;
  /** messages steered into this turn, waiting for the loop to take them */
  steer: LiveRun[];
  /** collected/steered runs whose outcome is the host's */
  merged: LiveRun[];
  steerable: boolean;
  /**
   * Stuck-session recovery gave up waiting for this turn after aborting it and released its session: when it
   * ends after all, its outcome is no longer this session's to record (its runs were ended by the recovery).
   */
  released?: boolean;
  /** the outcome the run wrote with its answer (RunSpec.recordEnd): recordOutcome does not write that one again */
  recordedEnd?: RunResult;
  /** frees the session and global lanes the turn's run holds, for a run that ignored its abort */
  releaseLanes?: () => void;
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
  /**
   * The processing generation: a new number (unique in the process) each time a turn starts, or the session gets
   * work while idle. Recovery changes the session only while the generation it looked at is still current.
   */
  generation: number;
  /** when the current generation began */
  processingSince: number;
  /** when the armed drain timer is due (absent while none is armed) */
  dueAt?: number;
}

/** The queue's shared state; the functions in this folder each take it and do one thing. */
export interface QueueContext {
  readonly deps: QueueDeps;
  readonly live: Map<string, LiveRun>;
  readonly sessions: Map<string, SessionState>;
  draining: boolean;
  /** the last processing generation handed out (SessionState.generation) */
  generations: number;
  /** per accept lane (the session as requests name it): its accepts run one at a time, in arrival order */
  readonly accepting: KeyedSerial;
  /** who started runs of an earlier process that recovery ended or requeued (their records say so) */
  readonly recoveredOrigins: Map<string, RunOrigin>;
  /** run ends the store refused (a full disk), kept until it takes them; read in place of their records */
  readonly unrecorded: UnrecordedEnds;
  /** Sets the session's drain timer; wired by SessionQueue so the turn and intake code need not import it. */
  schedule(s: SessionState): void;
  /**
   * Set when this node is one of several on Postgres (src/cluster/): intake hands every stored input to it instead of
   * the local queue, and it feeds the local queue the inputs this node adopts. Unset (SQLite, one node): the queue
   * works as it always did, with no extra step per message.
   */
  cluster?: QueueCluster;
}

/** What the session queue asks of the cluster layer (src/cluster/intake.ts implements it). */
export interface QueueCluster {
  /**
   * The input is stored (queued, adopted by nobody): route it. If this node owns the session or can take its lease,
   * it adopts the session's queued inputs into the local queue (this one among them); else the owner is told.
   * Resolves once routed; never rejects (an input left unrouted is the sweeper's).
   */
  routeStored(sessionKey: string): Promise<void>;
  /** The local queue has nothing left for the session: its lease can go back. */
  sessionIdle(sessionKey: string): void;
  /** Start-up recovery on a node of a cluster: only what dead nodes left, never a live node's runs. */
  recover(): Promise<{ failed: string[]; requeued: string[] }>;
}

/** A queued input another node accepted and this node adopted (src/storage/postgres/queue-adopt.ts). */
export interface AdoptedRun {
  runId: string;
  sessionKey: string;
  acceptedAt: number;
  params: Record<string, unknown>;
  sessionQueueMode?: string;
  lastEventSeq: number;
  /** the receipt stored with the input (JSON text): not written again when this node issues the same one */
  storedReceipt?: string;
  /** the session's row, read with the input (the turn launched at once starts from it) */
  session?: SessionRecord;
}

/** Who started a run, told to `AgentService.accept` by the entry point. */
export interface RunOrigin {
  /** who started the run: a client id, "device:<id>", "cli", "cron:<jobId>" */
  actor: string;
}

/** The global lane the cron scheduler's runs take (one at a time unless configured). */
export const CRON_LANE = "cron";

/**
 * A cron run with an explicit timeout (the job set timeoutSeconds): the scheduler submits it in the `cron` lane
 * with `timeout`, both stored with the run's params, so a recovered run is still recognised. Its model idle
 * watchdog caps a cloud model's silence (agent/idle-watchdog.ts).
 */
export function isCronRunWithTimeout(spec: Pick<RunSpec, "lane" | "timeout">): boolean {
  return spec.lane === CRON_LANE && spec.timeout !== undefined && spec.timeout > 0;
}

/** The queue's view of one session with work, for the stuck-session diagnostics (queue/inspect.ts). */
export interface QueueSessionView {
  sessionKey: string;
  generation: number;
  processingSince: number;
  /** the active turn's host run, if a turn is active */
  active?: {
    runId: string;
    /** pending/queued/running as the queue sees it; "ended" when its LiveRun already ended (stale bookkeeping) */
    phase: LiveRun["phase"] | "ended";
    /** run ids merged into or steered into the turn (they share the host's outcome) */
    merged: string[];
  };
  /** inputs waiting: queued messages, steered messages not taken yet, a pending overflow notice */
  queued: number;
  /** when the drain timer is due; absent when none is armed */
  dueAt?: number;
}
