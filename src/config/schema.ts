import os from "node:os";
import { z } from "zod";
import { checkJobTimes } from "../cron/schedule.js";
import { OPERATOR_SCOPES } from "../protocol/frames.js";
import { cronJobSchema } from "../protocol/params.js";

/**
 * The one schema that carries every config default. Key names follow OpenClaw's so its users recognise them.
 * Objects are strict: an unknown key is reported with its path instead of being silently ignored.
 * `prefault({})` parses an absent section through its schema, so nested defaults always materialize.
 * Keys described as "not yet supported" are accepted here for OpenClaw compatibility but rejected at load when set
 * (src/config/unsupported.ts), until something reads them.
 */

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

const httpUrl = z.string().refine(
  (v) => {
    try {
      const u = new URL(v);
      return u.protocol === "http:" || u.protocol === "https:";
    } catch {
      return false;
    }
  },
  { message: "expected a URL (http:// or https://)" },
);

/**
 * One entry of gateway.auth.tokens: exactly one of token / tokenHash, the scopes it grants, its session globs, and
 * whether its clients may use in-band control (SPEC 21).
 */
/** Per-token intake limits (limits/rate-limits.ts): over one, `agent`/`chat.send` is refused with `rate_limited`. */
const tokenRateLimits = z.strictObject({
  /** runs accepted per rolling minute */
  runsPerMinute: positiveInt.optional(),
  /** runs queued or running at once */
  concurrentRuns: positiveInt.optional(),
  /** model tokens (the cost ledger's total) per day in limits.timeZone */
  tokensPerDay: positiveInt.optional(),
});

const tokenGrant = z
  .strictObject({
    /**
     * The token's identity in the cost ledger, usage.summary, `limits.budgets[].match` (scope "token") and the rate
     * limits' counters; default `token:<first 12 hex digits of its sha256>` (never the token itself)
     */
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/, {
        message: "expected a name: letters, digits, _ . : - (at most 64)",
      })
      .optional(),
    /** this token's intake limits (else limits.tokens) */
    limits: tokenRateLimits.optional(),
    token: z.string().min(1).optional(),
    tokenHash: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "expected the sha256 of the token as 64 hex digits")
      .optional(),
    scopes: z.array(z.enum(OPERATOR_SCOPES)).min(1),
    sessions: z.array(z.string().min(1)).default(["*"]),
    /**
     * In-band control: `/stop`, `/new`, `/reset`, `/compact` and queueMode "interrupt" act on the whole session (other
     * clients' runs and queued input too). false: such a message is refused (`forbidden`, naming this key), and a
     * session or configured queue mode of "interrupt" queues this token's messages as followups instead.
     */
    commands: z.boolean().default(true),
  })
  .refine((g) => (g.token === undefined) !== (g.tokenHash === undefined), {
    message: "set exactly one of token or tokenHash",
  });

function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** One entry of limits.budgets (limits/budgets.ts). */
const budgetConfig = z
  .strictObject({
    /** the budget's name in errors, events and audit rows; default `limits.budgets[<i>]` */
    id: z.string().min(1).max(64).optional(),
    scope: z.enum(["agent", "session", "token", "global"]),
    /** a glob over the agent id, session key or token name; absent: each agent/session/token has its own budget */
    match: z.string().min(1).optional(),
    window: z.union([
      z.enum(["run", "day", "month"]),
      z.strictObject({
        rollingHours: z
          .number()
          .positive()
          .max(24 * 366),
      }),
    ]),
    maxUsd: z.number().positive().optional(),
    maxTokens: positiveInt.optional(),
    action: z.enum(["stop", "pause"]).default("stop"),
  })
  .refine((b) => b.maxUsd !== undefined || b.maxTokens !== undefined, { message: "set maxUsd, maxTokens or both" })
  .refine((b) => b.scope !== "global" || b.match === undefined, { message: "a global budget has no match" });

const modelRef = z
  .string()
  .regex(/^[^/\s]+\/\S+$/, { message: 'expected "<provider>/<model>", e.g. "openai/gpt-4o-mini"' });

const modelSelection = z.strictObject({
  primary: modelRef.optional(),
  /** models tried in order when the primary fails with an error a retry cannot fix (SPEC 16, agent/run/fallback.ts) */
  fallbacks: z.array(modelRef).default([]),
});

/** OpenClaw's string form `model: "provider/model"` sets the primary only; the object form is what code reads. */
const defaultModelSelection = z
  .preprocess((v) => (typeof v === "string" ? { primary: v } : v), modelSelection)
  .prefault({});

/**
 * agents.defaults.models (OpenClaw's model catalog): each key a "provider/model" (or "provider/*", every model of
 * that provider). Non-empty, it is the allowlist of models a run, a session or a cron job may choose
 * (providers/model-choice.ts); `alias` is a short name usable wherever a model is chosen. OpenClaw's per-model
 * `params` are not supported (config/openclaw-only.ts names them in the load warning).
 */
const modelCatalog = z
  .record(
    z.string().regex(/^[^/\s]+\/\S+$/, { message: 'expected "<provider>/<model>" or "<provider>/*"' }),
    z.strictObject({ alias: z.string().trim().min(1).optional() }),
  )
  .default({});

import {
  apiKinds,
  dropPolicies,
  execAskModes,
  execSecurityModes,
  queueModes,
  reasoningLevels,
  supportedToolGroups,
  thinkingLevels,
  unsupportedToolGroups,
  verboseLevels,
} from "./constants.js";

export { apiKinds, dropPolicies, queueModes, reasoningLevels, thinkingLevels, verboseLevels };

/** a tool-name glob of mcp.servers.<name>.toolFilter / approval: `*` any run of characters, `?` one */
const toolGlob = z.string().trim().min(1, 'expected a glob pattern, e.g. "read_*"');

/**
 * mcp.servers.<name> (OpenClaw's names): a stdio server (`command`) or a remote one (`url`, Streamable HTTP unless
 * `transport: "sse"`). Read by tools/mcp/; the child's environment is built by tools/mcp/child-env.ts.
 */
const mcpServerConfig = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    /** the stdio child's own variables (beside PATH, HOME, LANG, TERM); values may hold "${ENV}" references */
    env: z
      .record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: "expected an environment variable name" }),
        z.string(),
      )
      .default({}),
    /** the stdio child's working directory (relative to the config file) */
    cwd: z.string().min(1).optional(),
    url: httpUrl.optional(),
    /** how `url` is spoken: "streamable-http" (the default) or the legacy "sse"; "stdio" goes with `command` */
    transport: z.enum(["stdio", "streamable-http", "sse"]).optional(),
    /** sent with every HTTP request; values may hold "${ENV}" references */
    headers: z.record(z.string(), z.string()).default({}),
    enabled: z.boolean().default(true),
    /** which of the server's tools are offered: include (default all), then exclude; globs on the server's own names */
    toolFilter: z
      .strictObject({ include: z.array(toolGlob).optional(), exclude: z.array(toolGlob).optional() })
      .optional(),
    requestTimeoutMs: positiveInt.default(60000),
    connectionTimeoutMs: positiveInt.default(30000),
    /** "always": every call of this server's tools waits for an operator; {always: [globs]}: those tools only */
    approval: z
      .union([z.enum(["never", "always"]), z.strictObject({ always: z.array(toolGlob).min(1) })])
      .default("never"),
  })
  .superRefine((server, ctx) => {
    if (server.command === undefined && server.url === undefined) {
      ctx.addIssue({ code: "custom", message: "set command (a stdio server) or url (a remote server)" });
    } else if (server.command !== undefined && server.url !== undefined) {
      ctx.addIssue({
        code: "custom",
        message: "set either command (a stdio server) or url (a remote server), not both",
      });
    } else if (server.command !== undefined && server.transport !== undefined && server.transport !== "stdio") {
      ctx.addIssue({
        code: "custom",
        message: `"${server.transport}" needs a url, not a command`,
        path: ["transport"],
      });
    } else if (server.url !== undefined && server.transport === "stdio") {
      ctx.addIssue({ code: "custom", message: '"stdio" needs a command, not a url', path: ["transport"] });
    }
  });

/** "host:sandbox[:ro|rw]", Docker's bind syntax (OpenClaw's docker.binds); read-only unless ":rw" */
const sandboxBind = z.string().superRefine((bind, ctx) => {
  const parts = bind.split(":");
  const mode = parts.length === 3 ? parts[2] : undefined;
  if (parts.length < 2 || parts.length > 3 || (mode !== undefined && mode !== "ro" && mode !== "rw")) {
    ctx.addIssue({ code: "custom", message: 'expected "/host/path:/sandbox/path" with an optional ":ro" or ":rw"' });
    return;
  }
  const [host, inside] = parts;
  if (!host.startsWith("/") && !host.startsWith("~"))
    ctx.addIssue({ code: "custom", message: `host path "${host}" must be absolute` });
  if (!inside.startsWith("/") || inside === "/" || /^\/(proc|dev|workspace)(\/|$)/.test(inside))
    ctx.addIssue({
      code: "custom",
      message: `sandbox path "${inside}" must be absolute and not /, /proc, /dev or /workspace (the workspace's own place)`,
    });
});

/**
 * agents.defaults.sandbox and agents.list[].sandbox (OpenClaw's names; tools/sandbox/settings.ts gives the defaults
 * and merges an agent's keys over the default ones). `workspaceRoot` keeps its older meaning: it redirects every
 * agent's workspace to `<workspaceRoot>/<agentId>`, sandboxed or not.
 */
const sandboxConfig = z.strictObject({
  workspaceRoot: z.string().optional(),
  /** off; non-main: every session except the agent's main one; all */
  mode: z.enum(["off", "non-main", "all"]).optional(),
  /** one sandbox per session, per agent, or one for everything */
  scope: z.enum(["session", "agent", "shared"]).optional(),
  /** none: a fresh per-scope dir at /workspace; ro / rw: the agent's workspace read-only / read-write */
  workspaceAccess: z.enum(["none", "ro", "rw"]).optional(),
  backend: z.enum(["bubblewrap", "docker"]).optional(),
  network: z.enum(["none", "host"]).optional(),
  /** names of variables passed from the gateway's environment into the sandbox (beside tools.exec.env's) */
  env: z
    .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: "expected an environment variable name" }))
    .optional(),
  binds: z.array(sandboxBind).optional(),
  /** the longest one exec command may run inside (its default and its cap) */
  timeoutSeconds: positiveInt.optional(),
  /** bubblewrap: an address-space cap per process; docker: the container's memory */
  memoryMb: positiveInt.optional(),
  /** docker only: the container's process limit */
  pids: positiveInt.optional(),
  /** docker only: the container's CPU share */
  cpus: z.number().positive().optional(),
  docker: z
    .strictObject({
      image: z.string().min(1).optional(),
      /** a container nobody ran a command in for this long is removed (OpenClaw's prune.idleHours, in minutes) */
      idleMinutes: positiveInt.optional(),
    })
    .optional(),
});

/** which mcp.servers an agent's runs may use; absent: every server */
const agentMcp = z.strictObject({ servers: z.array(z.string().min(1)).optional() });

const agentDefaults = z.strictObject({
  model: defaultModelSelection,
  models: modelCatalog,
  workspace: z.string().optional(),
  /** 0 = unlimited (model-stream watchdogs still apply). */
  timeoutSeconds: nonNegativeInt.default(172800),
  maxConcurrent: positiveInt.default(Math.max(8, 4 * os.cpus().length)),
  thinkingDefault: z.enum(thinkingLevels).default("off"),
  /** what a run shows of the model's reasoning: off, on (a block before the answer, and a reply payload), stream */
  reasoningDefault: z.enum(reasoningLevels).default("off"),
  /** inline tool summaries in the reply: off, on (one line per tool call), full (with the capped result) */
  verboseDefault: z.enum(verboseLevels).default("off"),
  /** Model calls per run before the loop stops with stopReason "max_steps". */
  maxSteps: positiveInt.default(50),
  /** "on": replies go out as blocks of 800–1,200 chars (`block` events, chat deltas) as well as the final (SPEC 7) */
  blockStreamingDefault: z.enum(["on", "off"]).default("off"),
  /** text_end: each block as soon as the text holds it, the rest when the message ends; message_end: all at the end */
  blockStreamingBreak: z.enum(["text_end", "message_end"]).default("text_end"),
  /**
   * ms over which a run's streamed deltas (answer and reasoning) are merged into one event before they reach the
   * bus, the store and the clients (agent/run/delta-coalescer.ts); no delta waits longer. 0: one event per chunk
   */
  streamCoalesceMs: nonNegativeInt.max(1000).default(40),
  sandbox: sandboxConfig.prefault({}),
  mcp: agentMcp.prefault({}),
  compaction: z
    .strictObject({
      /** tokens kept free for the reply and the summary (capped at a quarter of the window) */
      reserveTokens: nonNegativeInt.default(20000),
      /** recent history kept verbatim by a compaction (capped at a quarter of the window) */
      keepRecentTokens: positiveInt.default(20000),
      /** compactions per run before it ends with context_length */
      maxAttempts: positiveInt.max(10).default(3),
      /** the model that writes summaries; default: the run's model */
      model: modelRef.optional(),
    })
    .prefault({}),
});

/** A tools.allow / tools.deny entry: a tool name, a `*` glob, or one of the groups Loopgate has tools for. */
const toolPolicyEntry = z
  .string()
  .trim()
  .min(1, "expected a tool name, glob or group")
  .superRefine((entry, ctx) => {
    const name = entry.toLowerCase();
    if (!name.startsWith("group:") || (supportedToolGroups as readonly string[]).includes(name)) return;
    const supported = supportedToolGroups.join(", ");
    const missing = unsupportedToolGroups[name];
    ctx.addIssue({
      code: "custom",
      message: missing
        ? `${name} is not supported: Loopgate has none of its tools (${missing}); supported groups: ${supported}`
        : `unknown tool group ${name}; supported groups: ${supported}`,
    });
  });

/**
 * OpenClaw's tool policy (tools/policy.ts): deny wins, a non-empty allow is a whitelist. Per agent
 * (`agents.list[].tools`) it applies after the default lists, and can only take tools away.
 */
const toolPolicy = {
  allow: z.array(toolPolicyEntry).default([]),
  deny: z.array(toolPolicyEntry).default([]),
};

const agentEntry = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/i, { message: "expected an agent id: letters, digits, - and _" }),
  /** shown where agents are listed (unknown-agent errors, `loopgate config validate`) */
  name: z.string().optional(),
  workspace: z.string().optional(),
  model: z.union([modelRef, modelSelection]).optional(),
  /** the agent used when a request names none; at most one (else the first listed, else "main") */
  default: z.boolean().optional(),
  /** this agent's reasoning visibility (else agents.defaults.reasoningDefault) */
  reasoningDefault: z.enum(reasoningLevels).optional(),
  /** this agent's verbose level (else agents.defaults.verboseDefault) */
  verboseDefault: z.enum(verboseLevels).optional(),
  /** this agent's tool allow / deny lists, applied after the default ones (tools.allow / tools.deny) */
  tools: z.strictObject(toolPolicy).optional(),
  /** this agent's MCP servers (else agents.defaults.mcp.servers, else all) */
  mcp: agentMcp.optional(),
  /** this agent's sandbox keys, each over agents.defaults.sandbox's (workspaceRoot is a default-only key) */
  sandbox: sandboxConfig.omit({ workspaceRoot: true }).optional(),
  /** this agent's auth profile order per provider, tried before `auth.order` (credentials/order.ts) */
  auth: z.strictObject({ order: z.record(z.string(), z.array(z.string().min(1))).default({}) }).optional(),
});

/**
 * `auth.profiles.<provider:name>` (OpenClaw's shape): one credential of a provider. The key is `key` (a literal or
 * `${ENV}`) or `keyRef` (an env variable or a file, read at load); never echoed anywhere (credentials/config.ts).
 */
const authKeyRef = z.union([
  z.strictObject({ source: z.literal("env"), id: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/) }),
  z.strictObject({ source: z.literal("file"), path: z.string().min(1) }),
]);
const authProfile = z
  .strictObject({
    provider: z.string().min(1),
    /** "api_key" (sent as the provider's API key) or "token" (a bearer token the provider takes in the same place) */
    mode: z.enum(["api_key", "token"]).default("api_key"),
    key: z.string().min(1).optional(),
    keyRef: authKeyRef.optional(),
  })
  .refine((p) => (p.key === undefined) !== (p.keyRef === undefined), {
    message:
      // biome-ignore lint/suspicious/noTemplateCurlyInString: names the env reference syntax
      'expected exactly one of key ("${ENV}" or a literal) and keyRef ({source: "env", id} or {source: "file", path})',
  });

const authConfig = z.strictObject({
  profiles: z
    .record(
      z.string().regex(/^[a-z0-9][a-z0-9_.-]*:[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/, {
        message: 'expected a profile id "provider:name" (e.g. "openai:work")',
      }),
      authProfile,
    )
    .default({}),
  /** per provider: the profile ids to try first, in order (then the rest in declaration order) */
  order: z.record(z.string(), z.array(z.string().min(1))).default({}),
  /** OpenClaw's cooldown knobs: billing disables a profile for billingBackoffHours, doubling up to billingMaxHours */
  cooldowns: z
    .strictObject({
      billingBackoffHours: z.number().positive().default(5),
      billingMaxHours: z.number().positive().default(24),
      /** a profile's error count starts over when its last failure is older than this */
      failureWindowHours: z.number().positive().default(24),
    })
    .prefault({}),
});

const providerModel = z.strictObject({
  id: z.string().min(1),
  /** display name: shown beside the model ref where a run names its model (CLI result, status line, --json) */
  name: z.string().min(1).optional(),
  contextWindow: positiveInt.default(128000),
  maxTokens: positiveInt.default(8192),
  /** false: the model gets no thinking/reasoning parameters, whatever the run's thinking level */
  reasoning: z.boolean().optional(),
  /** USD per million tokens: the run's result carries an estimated cost from its usage */
  cost: z
    .strictObject({
      input: z.number().nonnegative().default(0),
      output: z.number().nonnegative().default(0),
      cacheRead: z.number().nonnegative().default(0),
      cacheWrite: z.number().nonnegative().default(0),
    })
    .optional(),
  /**
   * what the model reads: ["text"] or ["text", "image"]; absent: images for anthropic-messages and openai-responses
   * models, text only for openai-completions (providers/image-input.ts)
   */
  input: z
    .array(z.enum(["text", "image"]))
    .min(1)
    .optional(),
});

/**
 * Defaults (attempts 3, baseMs 500, maxMs 30000) live with the policy (agent/run/model-retry.ts DEFAULT_RETRY_POLICY),
 * because providers made from env vars alone are built without this schema.
 */
const retryPolicy = z
  .strictObject({
    /** retries after the first try; 0 = none */
    attempts: nonNegativeInt.max(10).optional(),
    baseMs: positiveInt.optional(),
    maxMs: positiveInt.optional(),
  })
  .refine((r) => r.baseMs === undefined || r.maxMs === undefined || r.baseMs <= r.maxMs, {
    message: "must not be larger than maxMs",
    path: ["baseMs"],
  });

const providerConfig = z.strictObject({
  api: z.enum(apiKinds),
  baseUrl: httpUrl.optional(),
  /** literal key, or "${ENV_VAR}" resolved when the provider is first used */
  apiKey: z.string().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  /**
   * the provider's request timeout and its model idle window; 0 (a loopback or private-network baseUrl only,
   * config/check.ts): no idle watchdog for a model on this machine or the user's own network
   */
  timeoutSeconds: nonNegativeInt.optional(),
  /** self-hosted: the 300 s idle window instead of the cloud 120 s; default from the baseUrl (private, loopback) */
  selfHosted: z.boolean().optional(),
  models: z.array(providerModel).default([]),
  /** scripted provider only: path of the JSON5 script (relative to the config file) */
  script: z.string().optional(),
  /** model retries for this provider's retryable errors (SPEC 16) */
  retry: retryPolicy.optional(),
});

const queueConfig = z.strictObject({
  mode: z.enum(queueModes).default("steer"),
  byChannel: z.record(z.string(), z.enum(queueModes)).default({}),
  debounceMs: nonNegativeInt.default(500),
  cap: positiveInt.default(20),
  drop: z.enum(dropPolicies).default("summarize"),
});

const execPattern = z.string().trim().min(1, 'expected a glob pattern, e.g. "git *"');
const EXEC_PATTERN_SHAPE = 'expected a glob pattern ("git *") or an OpenClaw allowlist entry ({ pattern: "git *" })';

/**
 * An exec allowlist: glob patterns, as strings or as OpenClaw's allowlist entries `{ pattern }`. Shared by
 * tools.exec.allowlist and exec.approvals.set (the console's exec policy page), so both refuse the same input.
 */
export const execAllowlist = z
  .array(z.union([execPattern, z.strictObject({ pattern: execPattern })], { error: EXEC_PATTERN_SHAPE }))
  .transform((entries) => entries.map((e) => (typeof e === "string" ? e : e.pattern)));

/** tools.exec: what the model may run (tools/exec-policy.ts says what an allowlist pattern matches) and with which env */
const execToolConfig = z.strictObject({
  /** unset: "full" for `loopgate agent --local`, "allowlist" for the gateway's runs */
  security: z
    .enum(execSecurityModes)
    .optional()
    .describe("deny, allowlist or full; unset: full for `agent --local`, allowlist for the gateway's runs"),
  ask: z
    .enum(execAskModes)
    .default("on-miss")
    .describe("when to ask an operator: off, on-miss (not allowlisted) or always"),
  /**
   * glob patterns, as strings or as OpenClaw's allowlist entries `{ pattern }` (exec-approvals.json's shape; its
   * bookkeeping fields id / lastUsedAt / lastUsedCommand / lastResolvedPath are OpenClaw's, not accepted here)
   */
  allowlist: execAllowlist
    .default([])
    .describe(
      "glob patterns of commands exec may run without asking (the console adds its own in exec-approvals.json)",
    ),
  /** how long a run waits for an operator's answer before the command is denied */
  approvalTimeoutSeconds: positiveInt
    .default(120)
    .describe("how long a run waits for an operator's answer before the command is denied, s"),
  /** names of environment variables the exec child gets from the process (beside PATH, HOME, LANG, TERM) */
  env: z
    .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: "expected an environment variable name" }))
    .default([]),
});

const installPolicy = z.strictObject({
  allow: z.array(z.string()).optional(),
  deny: z.array(z.string()).optional(),
  allowSources: z.array(z.enum(["dir", "npm"])).optional(),
  denySources: z.array(z.enum(["dir", "npm"])).optional(),
});

export const configSchema = z.strictObject({
  /** for editors (JSON schema hint); Loopgate ignores it on purpose */
  $schema: z.string().optional(),
  agents: z
    .strictObject({
      defaults: agentDefaults.prefault({}),
      list: z.array(agentEntry).default([]),
    })
    .prefault({}),
  models: z
    .strictObject({
      /**
       * OpenClaw: merge the configured providers with the built-in catalogs, or replace them. Loopgate's only
       * built-in providers are the env-only `openai` / `anthropic` (made from OPENAI_API_KEY / ANTHROPIC_API_KEY,
       * config/source.ts withEnvProviders): "merge" adds them, "replace" uses the configured providers alone.
       */
      mode: z.enum(["merge", "replace"]).default("merge"),
      providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/i), providerConfig).default({}),
    })
    .prefault({}),
  session: z
    .strictObject({
      writeLock: z
        .strictObject({
          acquireTimeoutMs: positiveInt
            .default(60000)
            .describe("how long a transcript writer waits for the session write lock before failing as busy, ms"),
        })
        .prefault({}),
      /** finished run records are pruned by the gateway (at start, then hourly); queued/running ones never */
      runResults: z
        .strictObject({ maxAgeHours: positiveInt.default(24 * 7), maxCount: positiveInt.default(10000) })
        .prefault({}),
    })
    .prefault({}),
  storage: z
    .strictObject({
      /** the gateway's start checks the database's pages (PRAGMA quick_check); a huge store may skip it */
      quickCheckOnStart: z.boolean().default(true),
      /** where state lives (SPEC 18): "sqlite" (the state dir's file) or "postgres" (storage.postgres) */
      backend: z.enum(["sqlite", "postgres"]).default("sqlite").describe("where sessions, runs and events are stored"),
      /** the Postgres backend; read only when backend is "postgres" (a missing URL is a load error, config/check.ts) */
      postgres: z
        .strictObject({
          /** postgres:// URL; unset: the LOOPGATE_POSTGRES_URL environment variable */
          url: z.string().min(1).optional(),
          /** the tables' schema (created when missing); unset: the server's search_path (normally "public") */
          schema: z
            .string()
            .regex(/^[a-z_][a-z0-9_]{0,62}$/, "expected a plain lower-case identifier ([a-z_][a-z0-9_]*, at most 63)")
            .optional(),
          /** pooled connections per process (the LISTEN connection is one more); default 10 */
          poolSize: positiveInt.optional(),
          /** the server cancels a statement running longer; default 30000 */
          statementTimeoutMs: positiveInt.optional(),
          /**
           * several nodes (src/cluster/): a node silent this long is dead, its sessions go to the others and its
           * active runs end as node_lost; heartbeat every third of it. Default 15000
           */
          leaseMs: z.number().int().min(300).optional(),
        })
        .prefault({}),
    })
    .prefault({}),
  /** several gateway nodes on one Postgres (docs/scale-out.md); nothing here applies to SQLite, which is one node */
  cluster: z
    .strictObject({
      nodeId: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, "expected letters, digits, '.', '_', ':' or '-' (at most 128)")
        .optional()
        .describe(
          "this node's id among the gateway nodes on one Postgres (logs, runs.node_id, the nodes table); unique per node. Unset: <hostname>-<pid>-<random>, a new id per start",
        ),
      workspace: z
        .enum(["shared", "affinity"])
        .optional()
        .describe(
          "how sessions keep their workspace when nodes share one Postgres: shared (agents' workspaces are one volume every node mounts at the same path) or affinity (the load balancer keeps each session's clients on one node). Unset on a Postgres node whose workspace is on a local disk: a warning at start",
        ),
    })
    .prefault({}),
  messages: z.strictObject({ queue: queueConfig.prefault({}) }).prefault({}),
  gateway: z
    .strictObject({
      port: z
        .number()
        .int()
        .min(0)
        .max(65535)
        .default(18789)
        .describe("TCP port the gateway listens on (WebSocket, console, HTTP)"),
      bind: z
        .string()
        .default("loopback")
        .describe("where it listens: loopback, lan, or an address; beyond loopback a token is required"),
      auth: z
        .strictObject({
          token: z.string().min(1).optional(),
          // SPEC 21: per-client grants; several tenants' bridges on one gateway
          tokens: z.array(tokenGrant).default([]),
        })
        .prefault({}),
      tickIntervalMs: positiveInt
        .default(30000)
        .describe("how often connected clients get a tick event (keepalive), ms"),
      maxPayload: positiveInt.default(25 * 1024 * 1024).describe("largest WebSocket frame a client may send, bytes"),
      maxBufferedBytes: positiveInt.default(8 * 1024 * 1024),
      slowConsumerMs: nonNegativeInt.default(5000),
      maxPageBytes: positiveInt.default(2 * 1024 * 1024),
      // connections that have not completed `connect`: above either cap the oldest one that has sent nothing is
      // closed to make room (1013), or the newcomer when none is silent; one that sends nothing for
      // silentTimeoutMs is closed (a client sends its connect as soon as the challenge arrives)
      preAuth: z
        .strictObject({
          maxConnections: positiveInt.default(128),
          maxConnectionsPerAddress: positiveInt.default(32),
          silentTimeoutMs: positiveInt.default(3000),
        })
        .prefault({}),
      // requests of one connection not answered yet (an `agent` request counts until its final answer)
      maxInFlightPerConnection: positiveInt.default(256),
      // connections past `connect` (gateway/connection-caps.ts): above either cap a `connect` is refused (retryable).
      // High enough for the streaming bench (3,000 clients with one token, bench/run.mjs); each idle one costs little
      maxConnections: positiveInt.default(8192),
      maxConnectionsPerToken: positiveInt.default(4096),
      // sessions one connection follows with sessions.messages.subscribe; beyond it the subscribe is refused
      maxMessageSubscriptionsPerConnection: positiveInt.default(1024),
      // attachments of agent / chat.send, made ready before the accept (agent/attachments.ts)
      attachments: z
        .strictObject({
          // images decoded and scaled at once, gateway-wide; the rest wait their turn (sharp runs on libuv's pool)
          imageConcurrency: positiveInt.default(2),
          // decoded attachment bytes of one connection's messages still being prepared; beyond it a send is refused
          maxInFlightBytesPerConnection: positiveInt.default(32 * 1024 * 1024),
        })
        .prefault({}),
      shutdownGraceMs: nonNegativeInt
        .default(10000)
        .describe("how long running runs may finish when the gateway stops, ms"),
      // live configuration (SPEC 26; gateway/config-reload.ts): the gateway watches its config file
      reload: z
        .strictObject({
          // "restart" (OpenClaw: restart the process on every change) is refused at load (check.ts): Loopgate does
          // not restart itself
          mode: z
            .enum(["hybrid", "hot", "restart", "off"])
            .default("hybrid")
            .describe(
              "hybrid or hot: apply a changed config file to the next run and name the keys that need a restart; off: do not watch the file (SIGHUP and config.patch still reload)",
            ),
          debounceMs: nonNegativeInt
            .max(60000)
            .default(300)
            .describe("how long the config file must stay unchanged before it is reloaded, ms"),
        })
        .prefault({}),
      // browser origins (scheme://host[:port]) allowed besides loopback ones and the gateway's own address
      allowedOrigins: z
        .array(z.string().min(1))
        .default([])
        .describe("browser origins (scheme://host[:port]) allowed besides loopback and the gateway's own address"),
      // SPEC 26: the OpenAI-compatible HTTP API on the gateway's port (gateway/openai-http/), OpenClaw's key names
      http: z
        .strictObject({
          endpoints: z
            .strictObject({
              chatCompletions: z
                .strictObject({
                  enabled: z
                    .boolean()
                    .default(false)
                    .describe(
                      "serve POST /v1/chat/completions (OpenAI-compatible, bearer tokens; GET /v1/models is served when this or responses is on)",
                    ),
                })
                .prefault({}),
              responses: z
                .strictObject({
                  enabled: z
                    .boolean()
                    .default(false)
                    .describe(
                      "serve POST /v1/responses (OpenAI Responses API, bearer tokens; GET /v1/models is served when this or chatCompletions is on)",
                    ),
                })
                .prefault({}),
            })
            .prefault({}),
        })
        .prefault({}),
      // Prometheus text at GET /metrics (SPEC 26; src/metrics/): off by default, and then nothing is measured
      metrics: z
        .strictObject({
          enabled: z
            .boolean()
            .default(false)
            .describe("serve Prometheus metrics at GET /metrics (off: nothing is measured, nothing is served)"),
          port: z
            .number()
            .int()
            .min(0)
            .max(65535)
            .optional()
            .describe("serve /metrics on this port of its own instead of the gateway's port (0: a free port)"),
          bind: z
            .string()
            .min(1)
            .optional()
            .describe(
              "where the metrics port listens (loopback, lan, or an address; default: gateway.bind); needs gateway.metrics.port",
            ),
        })
        .prefault({}),
    })
    .prefault({}),
  // stuck-session diagnostics (SPEC 13; src/diagnostics/): off by default, and then they cost nothing
  diagnostics: z
    .strictObject({
      enabled: z.boolean().default(false).describe("watch for stalled and stuck sessions (off: costs nothing)"),
      stuckSessionWarnMs: positiveInt
        .default(120000)
        .describe("a session idle this long while a run is active is reported stalled, ms"),
      // default max(300000, 3 × stuckSessionWarnMs): diagnostics/classify.ts defaultAbortMs
      stuckSessionAbortMs: positiveInt.optional(),
    })
    // an abort threshold at or below the warn threshold is refused at load (check.ts)
    .prefault({}),
  skills: z
    .strictObject({
      dirs: z
        .array(z.string())
        .default([])
        .describe("more skill folders, after each agent's workspace skills/ (the first skill of a name wins)"),
    })
    .prefault({}),
  hooks: z
    .strictObject({
      dirs: z.array(z.string()).default([]),
      internal: z
        .array(z.strictObject({ events: z.array(z.string()).min(1), module: z.string(), name: z.string().optional() }))
        .default([]),
    })
    .prefault({}),
  plugins: z
    .strictObject({
      load: z
        .strictObject({
          paths: z
            .array(z.string())
            .default([])
            .describe("plugin folders to load, besides the ones installed in <state dir>/plugins"),
        })
        .prefault({}),
      entries: z
        .record(
          z.string(),
          // `config` is handed to the plugin as api.config
          z.strictObject({
            enabled: z
              .boolean()
              .default(true)
              .describe("false: the plugin is not loaded (the console's switch overrides it)"),
            config: z.record(z.string(), z.unknown()).optional().describe("handed to the plugin as api.config"),
          }),
        )
        .default({}),
    })
    .prefault({}),
  security: z.strictObject({ installPolicy: installPolicy.prefault({}) }).prefault({}),
  /** auth profiles (SPEC 23): several credentials per provider, rotated on rate limits, billing and auth failures */
  auth: authConfig.prefault({}),
  tools: z.strictObject({ ...toolPolicy, exec: execToolConfig.prefault({}) }).prefault({}),
  /** MCP servers as tool sources (tools/mcp/) */
  mcp: z
    .strictObject({
      servers: z
        .record(
          z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, {
            message: "expected a server name: letters, digits, - and _ (at most 64)",
          }),
          mcpServerConfig,
        )
        .default({}),
    })
    .prefault({}),
  /** the audit ledger (SPEC 11/20): metadata-only rows of run and tool starts and ends, pruned at start and hourly */
  audit: z
    .strictObject({
      retentionDays: positiveInt.default(30).describe("audit rows older than this are pruned, days"),
      maxRows: positiveInt.default(100000).describe("audit rows kept at most (the oldest go first)"),
      /** rows that may wait to be written; beyond it new rows are dropped and counted, and a run never waits */
      queueSize: positiveInt.default(10000),
    })
    .prefault({}),
  /** SPEC 25: spend control (limits/): budgets checked before every model call, run caps, per-token intake limits */
  limits: z
    .strictObject({
      /** the IANA time zone `day` and `month` windows (and tokensPerDay) start in */
      timeZone: z
        .string()
        .refine((tz) => validTimeZone(tz), { message: 'expected an IANA time zone such as "UTC" or "Europe/Berlin"' })
        .default("UTC"),
      budgets: z.array(budgetConfig).default([]),
      /** caps of every run, checked before each of its model calls; over one the run ends with budget_exceeded */
      run: z
        .strictObject({
          maxTokens: positiveInt.optional(),
          maxUsd: z.number().positive().optional(),
          maxModelCalls: positiveInt.optional(),
          maxDurationSeconds: positiveInt.optional(),
        })
        .prefault({}),
      /** the intake limits of a token without its own `gateway.auth.tokens[].limits` (the single token's too) */
      tokens: tokenRateLimits.prefault({}),
      /** a paused run's question unanswered this long is denied */
      approvalTimeoutSeconds: positiveInt.default(600),
      /**
       * How stale a budget's window sum may get before the next check re-reads it from the ledger: other gateway
       * nodes' calls are seen within this (on Postgres they are also announced at once)
       */
      syncIntervalMs: positiveInt.default(5000),
      /** the cost ledger: rows kept this long and at most this many (pruned at start and hourly) */
      ledger: z
        .strictObject({
          retentionDays: positiveInt.default(90),
          maxRows: positiveInt.default(1_000_000),
          /** rows that may wait to be written; beyond it a row is dropped and counted (the budget still counts it) */
          queueSize: positiveInt.default(10000),
        })
        .prefault({}),
    })
    .prefault({}),
  /** SPEC 17: scheduled isolated turns in the `cron` lane (cron/scheduler.ts) */
  cron: z
    .strictObject({
      /** false: the gateway runs no job (config or RPC); cron.list still answers */
      enabled: z.boolean().default(true).describe("false: the gateway runs no cron job (cron.list still answers)"),
      /** runs missed while the gateway was down: "once" runs each such job once at start, "skip" records them skipped */
      catchUp: z
        .enum(["once", "skip"])
        .default("once")
        .describe(
          "runs missed while the gateway was down: once = run each such job once at start, skip = record them skipped",
        ),
      /**
       * The scheduler's deadline (s, from the run's start) for a job without `timeoutSeconds`; 0 = none. 3600 is
       * OpenClaw's safety ceiling for a cron agent turn without its own timeout: a hung model call ends there.
       */
      defaultTimeoutSeconds: nonNegativeInt
        .default(3600)
        .describe("deadline of a job run without its own timeoutSeconds, s (0 = none)"),
      /**
       * Cron runs at once (OpenClaw's key). Each job has at most one run going, so with 2 one hanging job never
       * holds back the others; a run past its deadline and cleanup stops counting.
       */
      maxConcurrentRuns: positiveInt.default(2).describe("cron runs at once (each job has at most one going)"),
      /** run records (`cron_runs`) kept per job (OpenClaw's `cron.runLog.keepLines`); pruned as they are written */
      runLog: z
        .strictObject({ keepLines: positiveInt.default(100).describe("run records kept per job (cron.runs)") })
        .prefault({}),
      jobs: z
        .array(cronJobSchema.superRefine(checkJobTimes))
        .default([])
        .describe("jobs from the config (switched and removed here, not from the console)"),
    })
    .superRefine((cron, ctx) => {
      const seen = new Map<string, number>();
      cron.jobs.forEach((job, i) => {
        const first = seen.get(job.id);
        if (first !== undefined) {
          ctx.addIssue({
            code: "custom",
            message: `duplicate job id "${job.id}" (also cron.jobs[${first}])`,
            path: ["jobs", i, "id"],
          });
        } else seen.set(job.id, i);
      });
    })
    .prefault({}),
});

export type LoopgateConfig = z.infer<typeof configSchema>;
export type ProviderConfig = z.infer<typeof providerConfig>;
export type AuthConfig = z.infer<typeof authConfig>;
export type AuthProfileConfig = z.infer<typeof authProfile>;
export type ExecToolConfig = z.infer<typeof execToolConfig>;
export type SandboxConfig = z.infer<typeof sandboxConfig>;
export type McpServerConfig = z.infer<typeof mcpServerConfig>;
export type CronConfig = LoopgateConfig["cron"];
export type QueueMode = (typeof queueModes)[number];
export type DropPolicy = (typeof dropPolicies)[number];
