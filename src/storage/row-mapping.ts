import type { AuditEvent, CronRunStatus } from "../protocol/payloads.js";
import type { ChatMessage } from "../providers/types.js";
import type {
  AuditQuery,
  AuthHealthRow,
  CronRunRecord,
  RunRecord,
  RunStatus,
  SessionRecord,
  StoredRunEvent,
  TranscriptKind,
  TranscriptRow,
} from "./types.js";

/**
 * Row ↔ record mapping shared by the SQLite and Postgres stores: their tables are twins (same columns, same
 * migration numbers), so a stored row reads back into the same record on either backend, written once here.
 */

export type Row = Record<string, unknown>;

export const sessionColumns: Record<string, string> = {
  agentId: "agent_id",
  generation: "generation",
  updatedAt: "updated_at",
  label: "label",
  modelOverride: "model_override",
  thinking: "thinking",
  queueMode: "queue_mode",
  verboseLevel: "verbose_level",
  reasoningLevel: "reasoning_level",
  inputTokens: "input_tokens",
  outputTokens: "output_tokens",
  totalTokens: "total_tokens",
  compactionCount: "compaction_count",
  skillsSnapshot: "skills_snapshot",
  authProfile: "auth_profile",
  authProfileOverride: "auth_profile_override",
};

export const runColumns: Record<string, string> = {
  status: "status",
  startedAt: "started_at",
  endedAt: "ended_at",
  stopReason: "stop_reason",
  error: "error",
  params: "params",
  result: "result",
  receipt: "receipt",
};

export const jsonRunColumns = new Set(["params", "result", "receipt"]);

export const cronRunColumns: Record<string, string> = {
  startedAt: "started_at",
  endedAt: "ended_at",
  runId: "run_id",
  status: "status",
  errorKind: "error_kind",
};

export function opt<T>(v: unknown): T | undefined {
  return v === null || v === undefined ? undefined : (v as T);
}

export function toSession(r: Row): SessionRecord {
  return {
    key: r.key as string,
    sessionId: r.session_id as string,
    agentId: r.agent_id as string,
    generation: r.generation as number,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
    label: opt(r.label),
    modelOverride: opt(r.model_override),
    thinking: opt(r.thinking),
    queueMode: opt(r.queue_mode),
    verboseLevel: opt(r.verbose_level),
    reasoningLevel: opt(r.reasoning_level),
    inputTokens: r.input_tokens as number,
    outputTokens: r.output_tokens as number,
    totalTokens: r.total_tokens as number,
    compactionCount: r.compaction_count as number,
    skillsSnapshot: opt(r.skills_snapshot),
    authProfile: opt(r.auth_profile),
    authProfileOverride: opt(r.auth_profile_override),
  };
}

export function toAuthHealth(r: Row): AuthHealthRow {
  return {
    profileId: r.profile_id as string,
    model: r.model as string,
    until: optNumber(r.until),
    reason: opt(r.reason),
    errorCount: Number(r.error_count),
    lastFailureAt: optNumber(r.last_failure_at),
    lastUsed: optNumber(r.last_used),
  };
}

/** Postgres BIGINT columns come back as strings */
function optNumber(v: unknown): number | undefined {
  return v === null || v === undefined ? undefined : Number(v);
}

export function toRun(r: Row): RunRecord {
  return {
    runId: r.run_id as string,
    sessionKey: r.session_key as string,
    status: r.status as RunStatus,
    acceptedAt: r.accepted_at as number,
    startedAt: opt(r.started_at),
    endedAt: opt(r.ended_at),
    stopReason: opt(r.stop_reason),
    error: opt(r.error),
    params: JSON.parse(r.params as string),
    result: r.result ? JSON.parse(r.result as string) : undefined,
    receipt: r.receipt ? JSON.parse(r.receipt as string) : undefined,
  };
}

export function toCronRun(r: Row): CronRunRecord {
  return {
    id: r.id as number,
    jobId: r.job_id as string,
    scheduledAt: r.scheduled_at as number,
    startedAt: opt(r.started_at),
    endedAt: opt(r.ended_at),
    runId: opt(r.run_id),
    status: r.status as CronRunStatus,
    errorKind: opt(r.error_kind),
  };
}

export function toAuditEvent(r: Row): AuditEvent {
  return {
    eventId: r.id as string,
    sequence: r.seq as number,
    sourceSequence: r.source_seq as number,
    occurredAt: r.ts as number,
    actor: r.actor as string,
    kind: (r.action as string).startsWith("tool.") ? "tool_action" : "agent_run",
    action: r.action as AuditEvent["action"],
    status: r.status as AuditEvent["status"],
    ...(r.code !== null ? { code: r.code as string } : {}),
    sessionKey: r.session_key as string,
    runId: r.run_id as string,
    ...(r.tool_name !== null ? { toolName: r.tool_name as string } : {}),
    ...(r.tool_call_fp !== null ? { toolCallFingerprint: r.tool_call_fp as string } : {}),
    schemaVersion: r.schema_version as number,
    redaction: "metadata_only",
  };
}

/** audit.list's filters: query field → the comparison on its column; each backend appends its own placeholder */
export const auditFilters: ReadonlyArray<[keyof AuditQuery, string]> = [
  ["sessionKey", "session_key ="],
  ["runId", "run_id ="],
  ["actor", "actor ="],
  ["action", "action ="],
  ["status", "status ="],
  ["after", "ts >="],
  ["before", "ts <"],
  ["beforeSequence", "seq <"],
];

/** A transcript row's `data` column, parsed: what the row carries besides its columns. */
export type TranscriptRowData = { message?: ChatMessage; text?: string; firstKeptSeq?: number };

/** `data` is the row's parsed `data` column, its message's images already loaded when the caller asked for them. */
export function toTranscriptRow(r: Row, data: TranscriptRowData): TranscriptRow {
  return {
    sessionKey: r.session_key as string,
    generation: r.generation as number,
    seq: r.seq as number,
    kind: r.kind as TranscriptKind,
    runId: opt(r.run_id),
    createdAt: r.created_at as number,
    message: data.message,
    text: data.text,
    ...(data.firstKeptSeq !== undefined ? { firstKeptSeq: data.firstKeptSeq } : {}),
  };
}

export function toStoredRunEvent(r: Row): StoredRunEvent {
  return {
    runId: r.run_id as string,
    seq: r.seq as number,
    ts: r.ts as number,
    sessionKey: r.session_key as string,
    stream: r.stream as string,
    json: r.event as string,
  };
}

/**
 * `readTranscript`'s `maxBytes`: given the stored size of the matching rows, newest first, the seq range of those
 * that fit (the newest always does, unless `strict`); undefined when none does. Both backends then read exactly that
 * range.
 */
export function seqRangeWithin(
  sizes: ReadonlyArray<{ seq: number | string; bytes: number | string | null }>,
  maxBytes: number,
  strict = false,
): { oldest: number; newest: number } | undefined {
  let used = 0;
  let oldest: number | undefined;
  for (const [i, row] of sizes.entries()) {
    const bytes = Number(row.bytes ?? 0);
    if ((i > 0 || strict) && used + bytes > maxBytes) break;
    used += bytes;
    oldest = Number(row.seq);
  }
  return oldest === undefined ? undefined : { oldest, newest: Number(sizes[0].seq) };
}
