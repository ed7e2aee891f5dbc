/**
 * Params of every method (and of the request frame itself), as zod schemas. A bad param is answered with an
 * `invalid_params` error whose message names the field (`params.idempotencyKey: required`).
 *
 * Objects are strict, so a typo (`sesionKey`) is an error instead of a message silently going to the default
 * session; the other fields OpenClaw's schema allows for the same method are accepted and ignored, so OpenClaw
 * clients that send them keep working.
 */
import { z } from "zod";
import { CONTROL_CHARACTERS_MESSAGE, hasControlCharacter } from "./control-chars.js";
import { queueModes, reasoningLevels, thinkingLevels, verboseLevels } from "./enums.js";
import { EXEC_APPROVAL_DECISIONS } from "./exec-approvals.js";
import { ErrorCodes, type ErrorShape } from "./frames.js";
import { ATTACHMENT_LIMITS, CRON_JOB_LIMITS, MAX_REPORTED_ISSUES } from "./limits.js";
import { commonAgentParams, commonRequestFrame } from "./params-fast.js";
import { AUDIT_ACTIONS, AUDIT_STATUSES } from "./payloads.js";

const nonEmpty = z.string().min(1);
/** a session key, label or id: stored and looked up, so no control character (protocol/control-chars.ts) */
const plainText = z.string().refine((v) => !hasControlCharacter(v), { message: CONTROL_CHARACTERS_MESSAGE });
const plainName = plainText.min(1);
/** an opaque `nextCursor` from a paginated reply */
const pageCursor = nonEmpty.max(1024);
const agentId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/i, { message: "expected an agent id: letters, digits, - and _" });

/** Drops the named keys before strict validation; copies only when one of them is present. */
function ignoring<S extends z.ZodType>(ignored: readonly string[], schema: S) {
  const names = new Set(ignored);
  return z.preprocess((value) => {
    if (!value || typeof value !== "object" || Array.isArray(value)) return value;
    let copy: Record<string, unknown> | undefined;
    for (const key of Object.keys(value)) {
      if (names.has(key)) {
        copy ??= { ...(value as Record<string, unknown>) };
        delete copy[key];
      }
    }
    return copy ?? value;
  }, schema);
}

export const requestFrameSchema = z.object({
  type: z.literal("req"),
  id: nonEmpty,
  method: nonEmpty,
  params: z.unknown().optional(),
});

export const connectParamsSchema = ignoring(
  ["commands", "computerUse", "workerRuns", "permissions", "pathEnv", "locale", "userAgent"],
  z.strictObject({
    minProtocol: z.number().int().min(1),
    maxProtocol: z.number().int().min(1),
    client: z.object({
      id: nonEmpty,
      version: nonEmpty,
      platform: nonEmpty,
      mode: nonEmpty,
      deviceFamily: z.string().optional(),
      displayName: z.string().optional(),
      instanceId: z.string().optional(),
    }),
    /** `password` is taken as the shared secret too (Loopgate has no password mode); other OpenClaw auth fields are dropped */
    auth: z.object({ token: z.string().optional(), password: z.string().optional() }).optional(),
    role: nonEmpty.optional(),
    scopes: z.array(nonEmpty).optional(),
    caps: z.array(z.string()).optional(),
    device: z
      .strictObject({
        id: nonEmpty,
        publicKey: nonEmpty,
        signature: nonEmpty,
        signedAt: z.number().int().min(0),
        nonce: nonEmpty,
      })
      .optional(),
  }),
);
export type ConnectParams = z.infer<typeof connectParamsSchema>;

/** OpenClaw AgentParams fields we accept and ignore (channel delivery, ACP, swarm, internal handoffs...). */
const agentIgnored = [
  "to",
  "replyTo",
  "expectedExistingSessionId",
  "replyChannel",
  "accountId",
  "replyAccountId",
  "threadId",
  "groupId",
  "groupChannel",
  "groupSpace",
  "bestEffortDeliver",
  "cwd",
  "cleanupBundleMcpOnRunEnd",
  "modelRun",
  "bootstrapContextMode",
  "bootstrapContextRunKind",
  "acpTurnSource",
  "internalRuntimeHandoffId",
  "internalExecutionIdentityRetry",
  "internalExecutionIdentityRecoveryAttempt",
  "execApprovalFollowupExpectedSessionId",
  "internalEvents",
  "inputProvenance",
  "suppressPromptPersistence",
  "sessionEffects",
  "sourceReplyDeliveryMode",
  "disableMessageTool",
  "swarmCollector",
  "swarmOutputSchema",
  "forceRestartSafeTools",
  "forceCodeModeTools",
  "voiceWakeTrigger",
];

/**
 * One attachment, in OpenClaw's chat shape (`ChatSendParams.attachments[]`): `content` is the file's bytes in base64.
 * Images (png, jpeg, gif, webp: known by their bytes) reach the model as image parts of the user message; UTF-8
 * text files are inlined into the message, cut at ATTACHMENT_LIMITS.maxTextChars. Other fields OpenClaw allows
 * (`sizeBytes`, `durationMs`, ...) are accepted and ignored.
 */
export const attachmentSchema = z.looseObject({
  type: z.string().optional(),
  mimeType: z.string().optional(),
  fileName: z.string().max(255).optional(),
  content: z
    .string()
    .min(1)
    .max(Math.ceil(ATTACHMENT_LIMITS.maxBytes / 3) * 4, {
      message: `attachment too large: at most ${ATTACHMENT_LIMITS.maxBytes / (1024 * 1024)} MiB decoded`,
    })
    .regex(/^[A-Za-z0-9+/]*={0,2}$/, { message: "expected base64 content" }),
  width: z.number().int().positive().optional(),
  height: z.number().int().positive().optional(),
});
export type Attachment = z.infer<typeof attachmentSchema>;
const attachments = z.array(attachmentSchema).max(ATTACHMENT_LIMITS.maxCount).optional();

export const agentParamsSchema = ignoring(
  agentIgnored,
  z.strictObject({
    message: nonEmpty,
    idempotencyKey: plainName.max(512),
    agentId: agentId.optional(),
    sessionKey: plainText.max(512).optional(),
    sessionId: plainName.optional(),
    model: nonEmpty.optional(),
    provider: nonEmpty.optional(),
    thinking: z.enum(thinkingLevels).optional(),
    /** what the run shows of the model's reasoning (OpenClaw's session field name); thinking stays what we ask for */
    reasoningLevel: z.enum(reasoningLevels).optional(),
    /** inline tool summaries in the reply (OpenClaw's session field name) */
    verboseLevel: z.enum(verboseLevels).optional(),
    /** seconds; 0 = unlimited */
    timeout: z.number().int().min(0).optional(),
    lane: nonEmpty.optional(),
    promptMode: z.enum(["full", "minimal", "none"]).optional(),
    extraSystemPrompt: z.string().optional(),
    /** Loopgate's own: block streaming for this run (default agents.defaults.blockStreamingDefault) */
    blockStreaming: z.enum(["on", "off"]).optional(),
    /** Loopgate's own: the auth profile ("provider:name") this run prefers while it is usable (SPEC 23) */
    authProfile: plainName.max(200).optional(),
    queueMode: z.enum(queueModes).optional(),
    label: plainName.max(512).optional(),
    deliver: z.boolean().optional(),
    channel: z.string().optional(),
    attachments,
  }),
);
export type AgentParams = z.infer<typeof agentParamsSchema>;

/** setTimeout cannot wait longer; a bigger window would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

export const agentWaitParamsSchema = z.strictObject({
  runId: plainName,
  timeoutMs: z
    .number()
    .int()
    .min(0)
    .transform((v) => Math.min(v, MAX_TIMER_MS))
    .optional(),
});

export const chatSendParamsSchema = ignoring(
  [
    "intent",
    "fastMode",
    "fastAutoOnSeconds",
    "originatingChannel",
    "originatingTo",
    "originatingAccountId",
    "originatingThreadId",
    "replyToId",
    "toolBindings",
    "systemInputProvenance",
    "systemProvenanceReceipt",
    "suppressCommandInterpretation",
    "expectedLeafEntryId",
    "expectedSessionRoutingContract",
    "expectedPermissionMode",
    "expectedToolOverrides",
  ],
  z.strictObject({
    sessionKey: plainName.max(512),
    message: nonEmpty,
    idempotencyKey: plainName.max(512),
    queueMode: z.enum(queueModes).optional(),
    agentId: agentId.optional(),
    sessionId: plainName.optional(),
    thinking: z.enum(thinkingLevels).optional(),
    reasoningLevel: z.enum(reasoningLevels).optional(),
    verboseLevel: z.enum(verboseLevels).optional(),
    /** Loopgate's own, as on `agent` */
    blockStreaming: z.enum(["on", "off"]).optional(),
    deliver: z.boolean().optional(),
    /** OpenClaw's run timeout in ms: the run's `timeout`, in whole seconds rounded up (0: unlimited) */
    timeoutMs: z.number().int().min(0).optional(),
    attachments,
  }),
);

export const chatAbortParamsSchema = ignoring(
  ["preserveSideRuns"],
  z.strictObject({ sessionKey: plainName, runId: plainName.optional(), agentId: agentId.optional() }),
);

export const chatHistoryParamsSchema = ignoring(
  ["offset", "pendingBefore", "inputRunIds", "messageId", "sessionId", "maxChars"],
  z.strictObject({
    sessionKey: plainName,
    agentId: agentId.optional(),
    limit: z.number().int().min(1).max(1000).optional(),
    /** the previous page's nextCursor */
    cursor: pageCursor.optional(),
    /** seq cursor: only rows with a smaller seq */
    before: z.number().int().min(1).optional(),
    /** Loopgate's own: an earlier transcript generation (one kept by /new, /reset, sessions.reset); default current */
    generation: z.number().int().min(1).optional(),
    /**
     * a smaller page than the gateway's maxPageBytes. OpenClaw's Control UI (2026.9.6) sends it, though the published
     * schema (2026.9.1) does not list it
     */
    maxBytes: z.number().int().min(1).optional(),
  }),
);

export const sessionsListParamsSchema = ignoring(
  [
    "offset",
    "activeMinutes",
    "requireLastInteraction",
    "sortBy",
    "includeLastMessage",
    "label",
    "boardFace",
    "creatorId",
    "ownerId",
    "ownerFirst",
    "involvingMe",
    "involvingProfileId",
    "includePeople",
    "search",
    "archived",
  ],
  z.strictObject({
    limit: z.number().int().min(1).max(10000).optional(),
    agentId: agentId.optional(),
    /** the previous page's nextCursor */
    cursor: pageCursor.optional(),
    /** OpenClaw's filters: the global session (key "global") is listed unless this is false */
    includeGlobal: z.boolean().optional(),
    /** Loopgate knows every session's kind, so there is nothing "unknown" to include or leave out */
    includeUnknown: z.boolean().optional(),
    /** only sessions of agents in the config (a removed agent's sessions are left out) */
    configuredAgentsOnly: z.boolean().optional(),
    /** each row gets `derivedTitle`: the start of its first user message */
    includeDerivedTitles: z.boolean().optional(),
    /** only sessions spawned by that session: Loopgate spawns none, so the list is empty */
    spawnedBy: nonEmpty.optional(),
  }),
);

/**
 * SPEC names the session `sessionKey`; OpenClaw's sessions.* methods call it `key`. Either is accepted and
 * reported as `sessionKey` when both are missing.
 */
const sessionTarget = {
  sessionKey: plainName.optional(),
  key: plainName.optional(),
  agentId: agentId.optional(),
};
function requireTarget(v: { sessionKey?: string; key?: string }, ctx: z.RefinementCtx): void {
  if (v.sessionKey === undefined && v.key === undefined) {
    ctx.addIssue({ code: "custom", path: ["sessionKey"], message: "required" });
  }
}

export const sessionsGetParamsSchema = z.strictObject(sessionTarget).superRefine(requireTarget);
export const sessionsResetParamsSchema = z
  .strictObject({ ...sessionTarget, reason: z.enum(["new", "reset"]).optional() })
  .superRefine(requireTarget);
export const sessionsDeleteParamsSchema = ignoring(
  ["deleteTranscript", "expectedSessionId", "expectedLifecycleRevision", "expectedSessionUpdatedAt", "archivedOnly"],
  z
    .strictObject({
      ...sessionTarget,
      /** OpenClaw's: false deletes without firing session_end (e.g. cleaning up a spawned session); default true */
      emitLifecycleHooks: z.boolean().optional(),
    })
    .superRefine(requireTarget),
);

export const healthParamsSchema = z.object({});

/** OpenClaw's ExecApprovalResolveParams; its reviewer / grantExpiresInDays are accepted and ignored. */
export const execApprovalResolveParamsSchema = ignoring(
  ["reviewer", "grantExpiresInDays"],
  z.strictObject({ id: nonEmpty, decision: z.enum(EXEC_APPROVAL_DECISIONS) }),
);

export const execApprovalListParamsSchema = z.strictObject({
  /** only this session's approvals */
  sessionKey: plainName.optional(),
  agentId: agentId.optional(),
});

/** The most rows one `audit.list` page may ask for (OpenClaw's AuditListParams allows the same). */
export const AUDIT_LIST_MAX_LIMIT = 500;

/**
 * `audit.list` (SPEC 20): OpenClaw's AuditListParams names (`after`/`before` are times in ms), plus Loopgate's own
 * `actor` and `action` filters. Every filter given must match; rows come newest first.
 */
export const auditListParamsSchema = z.strictObject({
  sessionKey: plainName.optional(),
  runId: plainName.optional(),
  /** who started the run: a client id, "device:<id>", "cli", "cron:<jobId>" */
  actor: nonEmpty.optional(),
  action: z.enum(AUDIT_ACTIONS).optional(),
  status: z.enum(AUDIT_STATUSES).optional(),
  /** only rows that occurred at or after this time (ms since the epoch) */
  after: z.number().int().min(0).optional(),
  /** only rows that occurred before this time (ms since the epoch) */
  before: z.number().int().min(0).optional(),
  /** default 100 */
  limit: z.number().int().min(1).max(AUDIT_LIST_MAX_LIMIT).optional(),
  /** the previous page's nextCursor */
  cursor: pageCursor.optional(),
});

/** `mcp.status`: no parameters. */
export const mcpStatusParamsSchema = z.strictObject({});

/** `diagnostics.list`: optionally one session's entries only. */
export const diagnosticsListParamsSchema = z.strictObject({
  sessionKey: plainName.optional(),
});

export interface ParamIssue {
  path: string;
  message: string;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function formatPath(root: string, parts: ReadonlyArray<PropertyKey>): string {
  let out = root;
  for (const p of parts) out += typeof p === "number" ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}

/**
 * zod issues → `params.x: what is wrong`, one per field; at most `max` of them, and how many more there were.
 * The cap matters: one object with a million unknown keys is a million issues.
 */
export function paramIssues(
  error: z.ZodError,
  root: string,
  max = MAX_REPORTED_ISSUES,
): { issues: ParamIssue[]; more: number } {
  const out: ParamIssue[] = [];
  let more = 0;
  for (const issue of error.issues) {
    if (issue.code === "unrecognized_keys") {
      const room = Math.max(0, max - out.length);
      for (const key of issue.keys.slice(0, room))
        out.push({ path: formatPath(root, [...issue.path, key]), message: "unknown field" });
      more += Math.max(0, issue.keys.length - room);
      continue;
    }
    if (out.length >= max) {
      more++;
      continue;
    }
    let message: string;
    if (issue.code === "invalid_type") {
      const expected = issue.expected === "int" ? "an integer" : issue.expected;
      // JSON has no undefined: an undefined input is a missing field
      message = issue.input === undefined ? "required" : `expected ${expected}, got ${describe(issue.input)}`;
    } else if (issue.code === "too_small" && issue.origin === "string" && issue.minimum === 1) {
      message = "must not be empty";
    } else if (issue.code === "invalid_value") {
      message = `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    } else {
      message = issue.message.replace(/^Invalid input: /, "");
    }
    out.push({ path: formatPath(root, issue.path), message });
  }
  return { issues: out, more };
}

/**
 * Schemas with a precompiled check of their common shape (protocol/params-fast.ts): what it accepts skips zod;
 * everything else, and every error, goes through zod.
 */
const fastChecks = new Map<z.ZodType, (value: unknown) => unknown>([
  [agentParamsSchema, commonAgentParams],
  [requestFrameSchema, commonRequestFrame],
]);

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: ErrorShape };

/** Absent params mean `{}`: `health` and `sessions.list` need none. */
export function parseParams<S extends z.ZodType>(schema: S, raw: unknown): ParseResult<z.output<S>> {
  return parseWith(schema, raw ?? {}, "params");
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, root: string): ParseResult<z.output<S>> {
  const fast = fastChecks.get(schema)?.(value);
  if (fast !== undefined) return { ok: true, value: fast as z.output<S> };
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return { ok: true, value: result.data };
  const { issues, more } = paramIssues(result.error, root);
  const listed = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  return {
    ok: false,
    error: {
      code: ErrorCodes.invalidParams,
      message: more ? `${listed}; and ${more} more` : listed,
      details: more ? { issues, more } : { issues },
    },
  };
}

/**
 * A job's text field, bounded: a job is stored, listed by every `cron.list` and parsed at every start, so a 2 MB
 * schedule is refused with the limit and the length it had (never echoed back).
 */
function cronText(max: number) {
  return nonEmpty.max(max, {
    error: (issue) => `expected at most ${max} characters, got ${String(issue.input ?? "").length}`,
  });
}

/**
 * One cron job (SPEC 17), as config `cron.jobs[]` and `cron.add` take it. The schedule (5 cron fields, or 6 with
 * seconds) and the IANA `tz` are checked where jobs are accepted (cron/schedule.ts), so this leaf imports no parser.
 */
export const cronJobSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/i, { message: "expected a job id: letters, digits, ., - and _" }),
  schedule: cronText(CRON_JOB_LIMITS.scheduleChars),
  tz: cronText(CRON_JOB_LIMITS.tzChars).optional(),
  message: cronText(CRON_JOB_LIMITS.messageChars),
  agentId: agentId.optional(),
  /** default `cron:<id>`, a fresh transcript generation per run; a named session keeps its history */
  sessionKey: plainName
    .max(CRON_JOB_LIMITS.sessionKeyChars, {
      error: (issue) =>
        `expected at most ${CRON_JOB_LIMITS.sessionKeyChars} characters, got ${String(issue.input ?? "").length}`,
    })
    .optional(),
  /** the scheduler's deadline for a run, from its start; also the run's own timeout */
  timeoutSeconds: z.number().int().positive().optional(),
  /** "<provider>/<model>" for this job's runs */
  model: cronText(CRON_JOB_LIMITS.modelChars).optional(),
  enabled: z.boolean().optional(),
});
export type CronJobSpec = z.infer<typeof cronJobSchema>;

/** OpenClaw's cron.list filters, accepted and ignored: Loopgate lists every job (a handful, from config and RPC). */
const cronListIgnored = [
  "includeDisabled",
  "limit",
  "offset",
  "query",
  "enabled",
  "scheduleKind",
  "lastRunStatus",
  "trigger",
  "sortBy",
  "sortDir",
  "agentId",
  "compact",
  "includeDeliveryPreviews",
] as const;
export const cronListParamsSchema = ignoring(
  cronListIgnored,
  z.strictObject({
    /** how many recent runs to list per job (newest first); default 10 */
    runs: z.number().int().min(0).max(100).optional(),
  }),
);

/** cron.remove / cron.run name the job as `id` or `jobId` (OpenClaw accepts both). */
const cronJobRef = z
  .strictObject({
    id: nonEmpty.optional(),
    jobId: nonEmpty.optional(),
    // OpenClaw's cron.run options; Loopgate always runs the job now
    mode: z.enum(["due", "force", "if-enabled"]).optional(),
    expectedProcessInstanceId: nonEmpty.optional(),
  })
  .superRefine((p, ctx) => {
    if (p.id === undefined && p.jobId === undefined)
      ctx.addIssue({ code: "custom", message: "required", path: ["id"] });
  })
  .transform((p) => ({ id: (p.id ?? p.jobId) as string }));
export const cronAddParamsSchema = cronJobSchema;
export const cronRemoveParamsSchema = cronJobRef;
export const cronRunParamsSchema = cronJobRef;

/** The most runs one `runs.list` answer may hold. */
export const RUNS_LIST_MAX_LIMIT = 200;

/** `runs.list` (the web console's Runs page): the newest runs, of one session when `sessionKey` is given. */
export const runsListParamsSchema = z.strictObject({
  sessionKey: plainName.optional(),
  agentId: agentId.optional(),
  /** default 50 */
  limit: z.number().int().min(1).max(RUNS_LIST_MAX_LIMIT).optional(),
});

/** OpenClaw's SessionsDescribeParams */
export const sessionsDescribeParamsSchema = z.strictObject({
  key: plainName,
  includeDerivedTitles: z.boolean().optional(),
  includeLastMessage: z.boolean().optional(),
});

/** OpenClaw's SessionsResolveParams: the first of key, sessionId, label that finds a session */
export const sessionsResolveParamsSchema = ignoring(
  ["shortId", "slugHint"],
  z.strictObject({
    key: plainName.optional(),
    sessionId: plainName.optional(),
    label: plainName.max(512).optional(),
    agentId: agentId.optional(),
    spawnedBy: nonEmpty.optional(),
    includeGlobal: z.boolean().optional(),
    includeUnknown: z.boolean().optional(),
    /** answer `{ok: false}` instead of not_found */
    allowMissing: z.boolean().optional(),
  }),
);

/**
 * OpenClaw's SessionsCreateParams: Loopgate uses the key (or makes one), agent, label, model and thinking level, and
 * sends `message` when given; the workspace, worktree, permission and sharing fields are accepted and ignored.
 */
export const sessionsCreateParamsSchema = ignoring(
  [
    "displayName",
    "category",
    "contextWindow",
    "fastMode",
    "permissionMode",
    "toolOverrides",
    "incognito",
    "visibility",
    "catalogId",
    "parentSessionKey",
    "spawnDepth",
    "fork",
    "forkFrom",
    "emitCommandHooks",
    "succeedsParent",
    "task",
    "projectId",
    "projectGitUrl",
    "worktree",
    "worktreeBaseRef",
    "worktreeName",
    "execNode",
    "cwd",
  ],
  z.strictObject({
    key: plainName.max(512).optional(),
    idempotencyKey: plainName.max(512).optional(),
    agentId: agentId.optional(),
    label: plainName.max(512).optional(),
    model: nonEmpty.optional(),
    thinkingLevel: z.enum(thinkingLevels).optional(),
    message: z.string().optional(),
    attachments,
  }),
);

/** `null` clears a setting (OpenClaw's patch convention) */
const clearable = <S extends z.ZodType>(schema: S) => schema.nullable().optional();

/**
 * OpenClaw's SessionsPatchParams. What Loopgate applies to the session's next runs: `model` ("provider/model"),
 * `thinkingLevel`, `verboseLevel`, `label`, and its own `queueMode`; OpenClaw's other session settings are accepted
 * and ignored.
 */
export const sessionsPatchParamsSchema = ignoring(
  [
    "expectedSessionId",
    "expectedLifecycleRevision",
    "expectedPermissionMode",
    "expectedToolOverrides",
    "expectedMarkedUnreadAt",
    "icon",
    "color",
    "category",
    "boardFace",
    "statusNote",
    "attention",
    "ttlMinutes",
    "archived",
    "pinned",
    "unread",
    "contextWindow",
    "fastMode",
    "toolOverrides",
    "responseUsage",
    "elevatedLevel",
    "execHost",
    "execSecurity",
    "execAsk",
    "execNode",
    "permissionMode",
    "completionOwnerSessionKey",
    "inheritedToolPolicyVersion",
    "inheritedToolAllow",
    "inheritedToolDeny",
    "sendPolicy",
    "groupActivation",
  ],
  z.strictObject({
    key: plainName,
    agentId: agentId.optional(),
    label: clearable(plainName.max(512)),
    /** "provider/model", an alias from agents.defaults.models, or a bare model id (providers/model-choice.ts) */
    model: clearable(nonEmpty),
    thinkingLevel: clearable(z.enum(thinkingLevels)),
    verboseLevel: clearable(z.enum(verboseLevels)),
    /** what the session's runs show of the model's reasoning (Loopgate's reasoning visibility: off, on, stream) */
    reasoningLevel: clearable(z.enum(reasoningLevels)),
    /**
     * OpenClaw's trace level has no Loopgate counterpart (runs are traced with OpenTelemetry, docs/observability.md):
     * a level is refused naming the param rather than accepted and dropped; null (clear it) asks for nothing
     */
    traceLevel: z
      .unknown()
      .refine((v) => v === null || v === undefined, {
        error:
          "Loopgate has no trace levels: runs are traced with OpenTelemetry (docs/observability.md); only null is accepted",
      })
      .optional(),
    /** Loopgate's own: the session's queue mode (SPEC 2) */
    queueMode: clearable(z.enum(queueModes)),
    /** Loopgate's own: the user's auth profile pin ("provider:name"), kept across resets, preferred while usable */
    authProfile: clearable(plainName.max(200)),
  }),
);
export type SessionsPatchParams = z.infer<typeof sessionsPatchParamsSchema>;

/** sessions.subscribe / sessions.unsubscribe take nothing */
export const emptyParamsSchema = z.strictObject({});

/** OpenClaw's SessionsMessagesSubscribeParams / SessionsMessagesUnsubscribeParams */
export const sessionsMessagesSubscribeParamsSchema = ignoring(
  ["includeApprovals"],
  z.strictObject({ key: plainName, agentId: agentId.optional() }),
);

/** OpenClaw's SessionsObserverVisibilityParams: accepted; Loopgate has no observer to pause */
export const sessionsObserverVisibilityParamsSchema = z.strictObject({ visible: z.boolean() });

/** OpenClaw's ChatMetadataParams */
export const chatMetadataParamsSchema = z.strictObject({
  agentId: agentId.optional(),
  sessionKey: plainName.optional(),
});

/** chat.startup has no published params definition: the session a chat view opens on, if it names one */
export const chatStartupParamsSchema = z.looseObject({
  sessionKey: plainName.optional(),
  agentId: agentId.optional(),
  /** the history page it opens with, as chat.history takes them (OpenClaw's Control UI sends limit 80) */
  limit: z.number().int().min(1).max(1000).optional(),
  maxBytes: z.number().int().min(1).optional(),
});

/** OpenClaw's AgentIdentityParams */
export const agentIdentityParamsSchema = z.strictObject({
  agentId: agentId.optional(),
  sessionKey: plainText.optional(),
});

/** OpenClaw's ModelsListParams: `view` picks which models (Loopgate lists configured ones in every view) */
export const modelsListParamsSchema = ignoring(
  // sessionKey: OpenClaw's Control UI (2026.9.6) sends it, though the published schema (2026.9.1) does not list it
  ["includeProviderCapabilities", "preparedOnly", "refresh", "sessionKey"],
  z.strictObject({
    agentId: agentId.optional(),
    view: z.enum(["default", "configured", "provider-config", "all"]).optional(),
  }),
);

/** OpenClaw's ModelsAuthStatusParams */
export const modelsAuthStatusParamsSchema = z.strictObject({
  refresh: z.boolean().optional(),
  agentId: z.string().optional(),
});

/** `models.authClear` (Loopgate's own): ends an auth profile's cooldowns and disable on every node */
export const modelsAuthClearParamsSchema = z.strictObject({ id: plainName.max(200) });

/** OpenClaw's UpdateStatusParams */
export const updateStatusParamsSchema = z.strictObject({ refreshCheckout: z.boolean().optional() });

/** OpenClaw's CommandsListParams */
export const commandsListParamsSchema = z.strictObject({
  sessionKey: plainName.optional(),
  agentId: agentId.optional(),
  provider: nonEmpty.optional(),
  scope: z.enum(["text", "native", "both"]).optional(),
  includeArgs: z.boolean().optional(),
});

/** status and plugin.approval.list have no published params definition; OpenClaw clients send none */
export const looseEmptyParamsSchema = z.looseObject({});

/**
 * agent.events (SPEC 15, 20): a run's stored events after `afterSeq`, then its live ones. `cursor` (the previous
 * reply's nextCursor) continues a paged replay; it replaces `afterSeq`.
 */
export const agentEventsParamsSchema = z.strictObject({
  runId: plainName,
  afterSeq: z.number().int().min(0).optional(),
  limit: z.number().int().min(1).max(1000).optional(),
  cursor: pageCursor.optional(),
});

/** The largest `raw` config.patch / config.apply take: a config file's own cap (config/source.ts CONFIG_MAX_BYTES). */
export const CONFIG_RAW_MAX_CHARS = 1024 * 1024;

/**
 * config.patch (OpenClaw's ConfigPatchParams): `raw` a JSON5 merge patch (`null` deletes a key), `baseHash` config.get's
 * hash (required when the file exists), `replacePaths` the arrays the patch may shorten. OpenClaw's restart and
 * delivery fields are accepted and ignored: Loopgate applies the change itself and restarts nothing.
 */
export const configPatchParamsSchema = z.strictObject({
  raw: z.string().min(1).max(CONFIG_RAW_MAX_CHARS),
  baseHash: z.string().min(1).max(128).optional(),
  replacePaths: z.array(z.string().min(1).max(512)).max(256).optional(),
  note: z.string().max(1000).optional(),
  sessionKey: z.string().optional(),
  deliveryContext: z.looseObject({}).optional(),
  restartDelayMs: z.number().int().nonnegative().optional(),
});

/** config.apply (OpenClaw's ConfigApplyParams): `raw` the whole config, replacing the file. */
export const configApplyParamsSchema = configPatchParamsSchema.omit({ replacePaths: true });
