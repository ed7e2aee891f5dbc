/**
 * Stuck-session diagnostics (SPEC 13) as clients see them: the `diagnostic` event, the entries of
 * `diagnostics.list` and the log lines all carry these shapes, declared here once.
 */

/**
 * How a session that stayed in processing past `diagnostics.stuckSessionWarnMs` without observed progress is
 * classified:
 * - `session.long_running`: an owned run, model call or tool call that is merely slow (an owned silent model or tool
 *   call stays here until `stuckSessionAbortMs`; a wait for a lane, the session lock or an approval always does);
 * - `session.stalled`: active work without recent progress; recovery aborts and drains it at the abort threshold;
 * - `session.stuck`: stale, recoverable bookkeeping: a session marked busy with no live run, queued work with
 *   nothing active and nothing scheduled, or model/tool activity no live run owns. Recovery releases it at once.
 */
export type SessionDiagnosticType = "session.long_running" | "session.stalled" | "session.stuck";

/** What the session was seen doing when it was classified. */
export type SessionActivityKind =
  /** a run of the session is active, between model and tool calls (preparing, finishing, hooks) */
  | "run"
  /** inside a model call (waiting for its first or next chunk) */
  | "model"
  /** inside a tool call */
  | "tool"
  /** waiting for a lane, the session write lock, an exec approval or a retry's backoff: never a stall */
  | "waiting"
  /** inputs queued and nothing active */
  | "queued";

export interface SessionDiagnostic {
  type: SessionDiagnosticType;
  sessionKey: string;
  /** the run the classification is about (absent for queued work with nothing active) */
  runId?: string;
  activity: SessionActivityKind;
  /** the tool running, for `activity: "tool"` */
  toolName?: string;
  /** what a `waiting` run waits for: "lane", "session_lock", "approval", "retry" (a model retry's backoff) */
  waitingFor?: string;
  /** whether a live run of the session queue owns the activity */
  owned: boolean;
  /** ms since the last observed progress (reply, tool, status, block or lock event) */
  idleMs: number;
  /** ms since the session's current processing generation began */
  processingMs: number;
  /** the session's processing generation (a turn's start begins a new one) */
  generation: number;
  /** inputs waiting behind the active run (queued, steered not yet taken, overflow notice) */
  queued: number;
  /** when the classification was made (epoch ms) */
  ts: number;
  /** one line for people: why this class */
  reason: string;
}

/** What recovery does to a session. */
export type RecoveryAction =
  /** a stalled run is aborted through its controller and drained */
  | "abort_run"
  /** stale bookkeeping is dropped and the session's queue restarted */
  | "release_session";

export type RecoveryOutcome =
  /** the run ended after the abort */
  | "aborted"
  /** the run did not end within the drain window after its abort: its session was released around it */
  | "released_after_abort"
  /** stale bookkeeping was dropped; queued work (if any) was started again */
  | "released"
  /** a new processing generation began meanwhile: nothing was changed */
  | "superseded"
  /** the state recovery was asked to fix was no longer there */
  | "nothing_to_do";

/** A recovery's structured result: one `requested` and then one `completed` per recovery. */
export interface SessionRecoveryDiagnostic {
  type: "session.recovery";
  phase: "requested" | "completed";
  action: RecoveryAction;
  sessionKey: string;
  runId?: string;
  generation: number;
  /** the classification that asked for the recovery */
  cause: SessionDiagnosticType;
  /** `completed` only */
  outcome?: RecoveryOutcome;
  /** inputs still queued for the session when the recovery completed: they run next, none is dropped */
  queued?: number;
  ts: number;
}

/** Payload of the `diagnostic` gateway event and an entry of `diagnostics.list`'s `recent`. */
export type Diagnostic = SessionDiagnostic | SessionRecoveryDiagnostic;

/** `diagnostics.list` result. */
export interface DiagnosticsListResult {
  enabled: boolean;
  stuckSessionWarnMs: number;
  stuckSessionAbortMs: number;
  /** the current classification of every busy session past the warn threshold (that the caller may see) */
  sessions: SessionDiagnostic[];
  /** the most recent diagnostics, oldest first (bounded) */
  recent: Diagnostic[];
}
