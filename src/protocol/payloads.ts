/**
 * Payloads the gateway sends: method results and event bodies. The run shapes themselves (receipt, final, wait
 * result) are in run.ts.
 */
import type { AgentEvent } from "./agent-events.js";
import type { McpServerHealth } from "./mcp.js";
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
/** Why `health` says ok: false: the store cannot write, or an enabled MCP server has failed. */
export type HealthDegraded = StorageDegraded | McpDegraded | ClusterDegraded;

/**
 * A gateway node on Postgres that cannot reach the store (its heartbeat or a read failed), or whose heartbeat has not
 * gone through for a whole lease, so its session leases have lapsed and other nodes may take its sessions.
 */
export interface ClusterDegraded {
  reason: "store unreachable" | "leases lost";
  /** what failed, in words (the driver's error; never the URL's password) */
  message: string;
  /** when it began (ms since the epoch, this node's clock) */
  since: number;
}

/** An enabled MCP server failed to start, timed out or crashed: its tools fail until it reconnects. */
export interface McpDegraded {
  reason: "mcp server failed";
  /** the failed servers' names, in config order */
  servers: string[];
}

export interface StorageDegraded {
  reason: "storage full";
  /** the SQLite error code behind it: SQLITE_FULL, SQLITE_IOERR_WRITE, ... */
  code: string;
  stateDir: string;
  since: number;
}

/**
 * `health` (and `/health` with details). The gateway-wide counts and the audit queue are shown only to a client
 * whose token covers every session; a token limited to some sessions (SPEC 21) gets none of them, and `cron` counts
 * only the jobs of its sessions.
 */
export interface HealthResult {
  /** false while degraded */
  ok: boolean;
  degraded?: HealthDegraded;
  version: string;
  uptimeMs: number;
  activeRuns?: number;
  sessions?: number;
  /** the audit ledger's write queue: rows waiting to be written, and rows dropped because it was full */
  audit?: AuditLedgerState;
  /** the scheduler's jobs and the last result of each (absent when cron is off) */
  cron?: CronHealth;
  /** inputs accepted and waiting behind an active run or a quiet window (not yet started) */
  queueDepth?: number;
  /** sessions the stuck-session diagnostics currently classify as stalled or stuck (0 when they are off) */
  stuckSessions?: number;
  /** every configured MCP server's state (absent when the gateway runs none) */
  mcp?: McpServerHealth[];
}

/**
 * A session as the gateway shows it: the store record minus internals (the skills snapshot). It is also an OpenClaw
 * `SessionRow` (that definition allows more properties): `kind`, `model`/`modelProvider`, `thinkingLevel`,
 * `verboseLevel`, `status` and `derivedTitle` carry its names.
 */
export interface SessionInfo {
  key: string;
  sessionId: string;
  /** OpenClaw's session kind: "global" for the global session, "direct" for every other */
  kind: "direct" | "global";
  agentId: string;
  generation: number;
  createdAt: number;
  updatedAt: number;
  label?: string;
  /** the session's model override, "provider/model" */
  model?: string;
  /** the provider part of `model` */
  modelProvider?: string;
  thinking?: string;
  /** the same as `thinking`, under OpenClaw's sessions.patch name */
  thinkingLevel?: string;
  verboseLevel?: string;
  /** what the session's runs show of the model's reasoning: off, on, stream (OpenClaw's sessions.patch name) */
  reasoningLevel?: string;
  queueMode?: string;
  /** the user's auth profile pin (sessions.patch authProfile) */
  authProfile?: string;
  /** the auth profile the session's runs are pinned to (the one its last call succeeded on) */
  authProfilePinned?: string;
  /** "running" while a run of the session is in progress */
  status?: "running";
  /** the start of the first user message (when asked for with includeDerivedTitles) */
  derivedTitle?: string;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  compactionCount: number;
  /** what the session is doing now, queued work included (Loopgate's own; `status` keeps to OpenClaw's values) */
  activity?: SessionActivity;
  /** the sandbox the session's exec and file tools run in (Loopgate's own); absent: they run on the gateway host */
  sandbox?: SessionSandbox;
}

/** A sandboxed session's sandbox: its backend and keys, its scope, and the scope's dir on the gateway host. */
export interface SessionSandbox {
  backend: "bubblewrap" | "docker";
  scope: "session" | "agent" | "shared";
  workspaceAccess: "none" | "ro" | "rw";
  network: "none" | "host";
  scopeKey: string;
  dir: string;
}

/** A session's live state: `running` while a turn holds it, `queued` when messages wait and none runs yet. */
export interface SessionActivity {
  state: "idle" | "running" | "queued";
  /** the run of the active turn */
  activeRunId?: string;
  /** messages waiting behind the active turn (or for the session's lanes) */
  queued: number;
}

export interface SessionsListResult {
  sessions: SessionInfo[];
  count: number;
  /** pass as `cursor` for the next page; absent on the last page */
  nextCursor?: string;
  /**
   * The model a session without an override uses (the default agent's), with its context window. OpenClaw's Control UI
   * reads `defaults` from every sessions.list answer to show the model picker; each is null when no model is configured.
   */
  defaults?: SessionListDefaults;
}

export interface SessionListDefaults {
  modelProvider: string | null;
  model: string | null;
  contextTokens: number | null;
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

/**
 * One transcript row as chat clients read it. A message row is OpenClaw's (pi-ai) message shape, spread: `role`
 * ("user" | "assistant" | "toolResult"), `content` (text, `thinking`, `toolCall` and `image` blocks; a small image
 * carries its bytes, a big one is a reference `{blob, bytes, omitted: true}`: gateway/history-entry.ts), the tool result's `toolCallId` / `toolName` / `isError`, and
 * `timestamp`; Loopgate adds the row's `seq`, `kind`, `createdAt` and `runId`. Compaction and reset rows carry `text`.
 */
export interface HistoryEntry {
  seq: number;
  kind: "message" | "compaction" | "reset";
  runId?: string;
  createdAt: number;
  /** createdAt, under OpenClaw's message field name */
  timestamp: number;
  role?: string;
  content?: unknown;
  toolCallId?: string;
  toolName?: string;
  isError?: boolean;
  stopReason?: string;
  model?: string;
  usage?: unknown;
  /** the last assistant row of a run that ended in error, timeout or abort: why (pi-ai's field name) */
  errorMessage?: string;
  errorKind?: string;
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

/** What an audit row records (SPEC 11; OpenClaw's AuditEvent action names). */
export const AUDIT_ACTIONS = [
  "agent.run.started",
  "agent.run.finished",
  "tool.action.started",
  "tool.action.finished",
  // Loopgate's own: a run moved to another auth profile (SPEC 23); code "<reason>:<the profile it left>"
  "model.auth.rotated",
  /** a run waits for approval because a `pause` budget is used up (code: the budget) */
  "budget.paused",
  /** an `agent` / `chat.send` refused at intake (code: rate_limited or budget_exceeded); nothing was stored */
  "intake.refused",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** How it went, in OpenClaw's AuditEvent status words. */
export const AUDIT_STATUSES = [
  "started",
  "succeeded",
  "failed",
  "cancelled",
  "timed_out",
  "blocked",
  "unknown",
] as const;
export type AuditStatus = (typeof AUDIT_STATUSES)[number];

/** The version of the row shape below; a reader can tell rows written by an older gateway. */
export const AUDIT_SCHEMA_VERSION = 1;

/**
 * One audit ledger row: metadata only (SPEC 11). It never holds a prompt, a message, tool arguments or results, a
 * path or an error's text: `code` is a code (a run's stop reason or error kind, a tool's skip reason), and the tool
 * call is named by a fingerprint of its id. Field names follow OpenClaw's AuditEvent where it has the field.
 */
export interface AuditEvent {
  eventId: string;
  /** the ledger's own order: increases with every row, never reused (also after rows were pruned) */
  sequence: number;
  /** the seq of the run event the row was made from */
  sourceSequence: number;
  occurredAt: number;
  /** who started the run: a client id, "device:<id>", "cli", "cron:<jobId>" (or "unknown") */
  actor: string;
  /** what the row is about: the run, or one of its tool calls (follows from `action`) */
  kind: "agent_run" | "tool_action";
  action: AuditAction;
  status: AuditStatus;
  code?: string;
  sessionKey: string;
  runId: string;
  toolName?: string;
  /** the first 16 hex digits of the sha256 of the tool call id */
  toolCallFingerprint?: string;
  schemaVersion: number;
  redaction: "metadata_only";
}

/** `audit.list`: newest first. `dropped`: rows the ledger lost since the gateway started because its queue was full. */
export interface AuditListResult {
  events: AuditEvent[];
  /** pass as `cursor` for the next (older) page; absent on the last page */
  nextCursor?: string;
  dropped: number;
}

/** The ledger's write queue as `health` reports it. */
export interface AuditLedgerState {
  backlog: number;
  dropped: number;
}

/** How a cron job's run ended: `running` until then; `skipped` when it was due but did not start (why: errorKind). */
export type CronRunStatus = "running" | "ok" | "error" | "timeout" | "skipped";

/** One run of a cron job, as cron.list and health show it. */
export interface CronRunInfo {
  jobId: string;
  /** the fire time it was due at (for `cron.run`: when it was asked for) */
  scheduledAt: number;
  startedAt?: number;
  endedAt?: number;
  runId?: string;
  status: CronRunStatus;
  /** error / skip reason kind: timeout, gateway_restart, overlap, missed, the run's error kind */
  errorKind?: string;
}

export interface CronJobInfo {
  id: string;
  schedule: string;
  tz?: string;
  message: string;
  agentId?: string;
  sessionKey: string;
  timeoutSeconds?: number;
  model?: string;
  enabled: boolean;
  /** config jobs cannot be removed by RPC */
  source: "config" | "rpc";
  nextRunAt?: number;
  /** newest first */
  runs: CronRunInfo[];
}

export interface CronListResult {
  enabled: boolean;
  jobs: CronJobInfo[];
}

export interface CronAddResult {
  job: CronJobInfo;
}

export interface CronRemoveResult {
  ok: true;
  id: string;
  removed: boolean;
}

export interface CronRunResult {
  ok: true;
  id: string;
  runId: string;
}

/** health.cron: the job count and the last result of each job (bounded). */
export interface CronHealth {
  jobs: number;
  last: Array<{ jobId: string; status: CronRunStatus; at: number; runId?: string }>;
}

/** One run as `runs.list` shows it: the run record's metadata, never its input or reply text. */
export interface RunInfo {
  runId: string;
  sessionKey: string;
  status: "queued" | "running" | "ok" | "error" | "timeout" | "aborted";
  acceptedAt: number;
  startedAt?: number;
  endedAt?: number;
  durationMs?: number;
  /** provider/model that answered */
  model?: string;
  usage?: { input: number; output: number; total: number };
  /** USD, every model call priced with the model that served it (absent when no model had a price) */
  costUsd?: number;
  stopReason?: string;
  /** the error's kind/summary as the run record has it */
  error?: string;
  /** what happened to the message (started, queued, collected, …) */
  receipt?: string;
  /** who started it: a client id, "device:<id>", "cli", "cron:<jobId>" */
  actor?: string;
}

/** `runs.list`: newest first. */
export interface RunsListResult {
  runs: RunInfo[];
}

/** `sessions.changed` (to clients that called sessions.subscribe and may see the session) */
export interface SessionsChangedEvent {
  sessionKey: string;
  /** the same key, under the name OpenClaw's sessions.* methods use */
  key: string;
  /** what happened; "status": a run of the session started or ended */
  reason: "created" | "reset" | "deleted" | "patched" | "status";
  ts: number;
  /** the session as sessions.list shows it (absent once deleted) */
  session?: SessionInfo;
}

/** `session.message` (to clients that called sessions.messages.subscribe for the session): a row just appended */
export interface SessionMessageEvent {
  sessionKey: string;
  key: string;
  /** the row's seq in the session's current transcript generation */
  messageSeq: number;
  message: HistoryEntry;
}

/** sessions.subscribe, sessions.unsubscribe, sessions.messages.(un)subscribe */
export interface SubscribeResult {
  ok: true;
  /** sessions.messages.*: the session followed */
  key?: string;
  /** whether this connection now receives the events */
  subscribed: boolean;
}

/** sessions.describe */
export interface SessionsDescribeResult {
  ok: true;
  key: string;
  session: SessionInfo;
  /** the last message's text (when asked for with includeLastMessage) */
  lastMessagePreview?: string;
}

/** sessions.patch */
export interface SessionsPatchResult {
  ok: true;
  key: string;
  session: SessionInfo;
}

/** chat.metadata: what a chat view shows beside a session */
export interface ChatMetadataResult {
  agentId: string;
  sessionKey?: string;
  session?: SessionInfo;
  agent: AgentIdentity;
  /** the model the session's next run uses, "provider/model" */
  model?: string;
  thinkingLevels: string[];
  verboseLevels: string[];
  queueModes: string[];
}

/**
 * chat.startup: what a chat view needs to open. It is a chat.history page (OpenClaw's Control UI reads `messages`,
 * `sessionId` and `sessionInfo` from it exactly as from chat.history), with the agents and the session beside it.
 */
export interface ChatStartupResult extends ChatHistoryResult {
  defaultAgentId: string;
  mainKey: string;
  agents: Array<{ id: string; name?: string }>;
  /** the session the view opens on (OpenClaw's name), absent before its first message */
  sessionInfo?: SessionInfo;
}

/** agent.identity.get: OpenClaw's AgentIdentityResult */
export interface AgentIdentity {
  agentId: string;
  name?: string;
  nameSource?: "config" | "agent" | "workspace" | "default";
  avatar?: string;
  avatarStatus?: "none" | "local" | "remote" | "data";
  emoji?: string;
}

/** status: the gateway at a glance (no published result definition) */
/** `status`: like `health`, the counts are absent for a token limited to some sessions. */
export interface StatusResult {
  ok: boolean;
  version: string;
  uptimeMs: number;
  activeRuns?: number;
  sessions?: number;
  defaultAgentId: string;
  agents: string[];
  cron?: CronHealth;
}

/** One auth profile's health as `models.authStatus` reports it (SPEC 23): never a key. */
export interface AuthProfileStatus {
  /** "provider:name" */
  id: string;
  provider: string;
  mode: "api_key" | "token";
  /** ok; cooldown: some model of it is rate limited; disabled: the whole profile (billing, a refused key) */
  state: "ok" | "cooldown" | "disabled";
  /** when it is usable again (the disable's end, or the longest model cooldown's) */
  until?: number;
  /** the error kind that cooled or disabled it: rate_limit, billing, auth */
  reason?: string;
  /** the models cooling down, each until when */
  models?: Array<{ model: string; until: number; reason?: string }>;
  /** consecutive failures (the cooldown ladder's step); 0 after a success */
  errorCount: number;
  /** the last successful call on it (recorded at most once a minute) */
  lastUsed?: number;
  /** made from models.providers.<provider>.apiKey (`<provider>:default`) */
  implicit?: boolean;
}

/** models.authStatus: per provider, whether a key is configured (never the key); per auth profile, its health */
export interface ModelsAuthStatusResult {
  providers: Array<{ provider: string; api: string; configured: boolean; source: "config" | "env" | "none" }>;
  profiles: AuthProfileStatus[];
}

/** models.authClear: how many stored cooldown / disable rows were ended */
export interface ModelsAuthClearResult {
  ok: true;
  id: string;
  cleared: number;
}

/** config.get: the effective config with every secret replaced by "[redacted]" */
export interface ConfigGetResult {
  config: unknown;
  redacted: string[];
  /** the config file (absent when the gateway was not started from one) */
  path?: string;
  /** whether the file exists (a gateway on defaults has none until config.patch writes it) */
  exists?: boolean;
  /** sha-256 of the file's content now: config.patch's `baseHash` (absent when there is no file) */
  hash?: string;
}

/** config.patch / config.apply: written, validated and applied (SPEC 26) */
export interface ConfigWriteResult {
  ok: true;
  path: string;
  /** the new content's hash, the next write's `baseHash` */
  hash: string;
  /** the changed paths the gateway applied: the next run uses them */
  changedPaths: string[];
  /** changed keys that need a restart; they keep their running values until then */
  restartRequired: string[];
  /** the effective config now, redacted as config.get's */
  config: unknown;
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
