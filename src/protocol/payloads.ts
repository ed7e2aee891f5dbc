/**
 * Payloads the gateway sends: method results and event bodies. The run shapes themselves (receipt, final, wait
 * result) are in run.ts.
 */
import type { AgentEvent } from "./agent-events.js";
import type { Receipt } from "./run.js";

/** `agent` event payload: `{ runId, seq, stream, ts, sessionKey, data }` (SPEC 11/14). */
export type AgentEventPayload = AgentEvent;

export interface ConnectChallenge {
  nonce: string;
  ts: number;
}

export interface HelloOk {
  type: "hello-ok";
  protocol: number;
  server: { version: string; connId: string };
  features: { methods: string[]; events: string[] };
  /** required by the published HelloOk schema; kept minimal (no presence tracking yet) */
  snapshot: {
    presence: unknown[];
    health: { ok: true; ts: number };
    stateVersion: { presence: number; health: number };
    uptimeMs: number;
  };
  auth: { role: string; scopes: string[] };
  policy: {
    maxPayload: number;
    maxBufferedBytes: number;
    tickIntervalMs: number;
    /** what one `agent` / `chat.send` attachment may be (decoded bytes; images are scaled down after) */
    attachments: { maxBytes: number; maxImageBytes: number };
  };
}

/** First `res` of `agent` (and the only one of `chat.send`): sent before any model work starts. */
export interface AgentAccepted {
  runId: string;
  sessionKey: string;
  status: "accepted";
  acceptedAt: number;
  /** what happened to the message: started, steered into the active run, queued (position), ... (SPEC 2) */
  receipt?: Receipt;
}

export type ChatErrorKind = "refusal" | "timeout" | "rate_limit" | "context_length" | "unknown";

/** OpenClaw's chat message shape: clients render `content[].text`. */
export interface ChatMessagePayload {
  role: "assistant";
  content: Array<{ type: "text"; text: string }>;
  timestamp: number;
}

interface ChatEventBase {
  runId: string;
  sessionKey: string;
  /** the run seq of the agent event this chat event was built from (so clients can correlate both streams) */
  seq: number;
}

export type ChatEventPayload =
  /** `message` (the whole reply so far) rides only on checkpoint deltas (gateway/chat-projection.ts); OpenClaw's
   * ChatEvent schema makes it optional too */
  | (ChatEventBase & { state: "delta"; deltaText: string; message?: ChatMessagePayload; replace?: boolean })
  | (ChatEventBase & { state: "final"; message?: ChatMessagePayload; usage?: unknown; stopReason?: string })
  | (ChatEventBase & { state: "aborted"; errorMessage?: string; stopReason?: string })
  | (ChatEventBase & {
      state: "error";
      errorMessage?: string;
      errorKind: ChatErrorKind;
      usage?: unknown;
      stopReason?: string;
    });

export interface TickEvent {
  ts: number;
}

export interface ShutdownEvent {
  reason: string;
  restartExpectedMs?: number;
}

/** Why the gateway serves with limits: its store cannot write (new input is refused until it can again). */
export interface HealthDegraded {
  reason: "storage full";
  /** the SQLite error code behind it: SQLITE_FULL, SQLITE_IOERR_WRITE, ... */
  code: string;
  stateDir: string;
  since: number;
}

export interface HealthResult {
  /** false while degraded */
  ok: boolean;
  degraded?: HealthDegraded;
  version: string;
  uptimeMs: number;
  activeRuns: number;
  sessions: number;
}

/** A session as the gateway shows it: the store record minus internals (the skills snapshot). */
export interface SessionInfo {
  key: string;
  sessionId: string;
  agentId: string;
  generation: number;
  createdAt: number;
  updatedAt: number;
  label?: string;
  model?: string;
  thinking?: string;
  queueMode?: string;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  compactionCount: number;
}

export interface SessionsListResult {
  sessions: SessionInfo[];
  count: number;
  /** pass as `cursor` for the next page; absent on the last page */
  nextCursor?: string;
}

export interface SessionsGetResult {
  session: SessionInfo;
}

export interface SessionsResetResult {
  ok: true;
  key: string;
  generation: number;
}

/** Shaped like OpenClaw's SessionsDeleteResult (nothing is archived: old generations go with the session). */
export interface SessionsDeleteResult {
  ok: true;
  key: string;
  deleted: boolean;
  archived: string[];
}

export interface HistoryEntry {
  seq: number;
  kind: "message" | "compaction" | "reset";
  runId?: string;
  createdAt: number;
  message?: unknown;
  text?: string;
}

export interface ChatHistoryResult {
  sessionKey: string;
  sessionId?: string;
  generation: number;
  messages: HistoryEntry[];
  /** pass as `before` to page further back; absent when there is nothing older */
  nextBefore?: number;
  /** pass as `cursor` to page further back (it keeps to this reply's generation); absent when there is nothing older */
  nextCursor?: string;
}

export interface ChatAbortResult {
  ok: true;
  aborted: boolean;
  runIds: string[];
}

/**
 * One page of `agent.events`: the run's events with `afterSeq < seq ≤ lastSeq`, oldest first. Exactly once: the
 * pages of one replay reach `lastSeq`, and (unless `done`) the run's later events arrive as `agent` events after
 * this reply, none of them at or below `lastSeq`.
 */
export interface AgentEventsResult {
  runId: string;
  sessionKey: string;
  /** the run's status as of this reply */
  status: "queued" | "running" | "ok" | "error" | "timeout" | "aborted";
  /** the run has ended: nothing of it follows live */
  done: boolean;
  events: AgentEventPayload[];
  /** where this replay ends; the live events continue after it */
  lastSeq: number;
  /** the replay has more events up to lastSeq: call again with `{ runId, cursor }` */
  nextCursor?: string;
}
