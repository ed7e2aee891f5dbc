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

/** One entry of gateway.auth.tokens: exactly one of token / tokenHash, the scopes it grants, its session globs. */
const tokenGrant = z
  .strictObject({
    token: z.string().min(1).optional(),
    tokenHash: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "expected the sha256 of the token as 64 hex digits")
      .optional(),
    scopes: z.array(z.enum(OPERATOR_SCOPES)).min(1),
    sessions: z.array(z.string().min(1)).default(["*"]),
  })
  .refine((g) => (g.token === undefined) !== (g.tokenHash === undefined), {
    message: "set exactly one of token or tokenHash",
  });

const modelRef = z
  .string()
  .regex(/^[^/\s]+\/\S+$/, { message: 'expected "<provider>/<model>", e.g. "openai/gpt-4o-mini"' });

const modelSelection = z.strictObject({
  primary: modelRef.optional(),
  /** models tried in order when the primary fails with an error a retry cannot fix (SPEC 16, agent/run/fallback.ts) */
  fallbacks: z.array(modelRef).default([]),
});

import {
  apiKinds,
  dropPolicies,
  execAskModes,
  execSecurityModes,
  queueModes,
  reasoningLevels,
  thinkingLevels,
  verboseLevels,
} from "./constants.js";

export { apiKinds, dropPolicies, queueModes, reasoningLevels, thinkingLevels, verboseLevels };

const agentDefaults = z.strictObject({
  model: modelSelection.prefault({}),
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
  sandbox: z.strictObject({ workspaceRoot: z.string().optional() }).prefault({}),
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
   * the provider's request timeout and its model idle window; 0 (a loopback baseUrl only, config/check.ts): no idle
   * watchdog for a truly local model
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

/** tools.exec: what the model may run (tools/exec-policy.ts says what an allowlist pattern matches) and with which env */
const execToolConfig = z.strictObject({
  /** unset: "full" for `loopgate agent --local`, "allowlist" for the gateway's runs */
  security: z.enum(execSecurityModes).optional(),
  ask: z.enum(execAskModes).default("on-miss"),
  allowlist: z.array(z.string().trim().min(1, 'expected a glob pattern, e.g. "git *"')).default([]),
  /** how long a run waits for an operator's answer before the command is denied */
  approvalTimeoutSeconds: positiveInt.default(120),
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
      providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/i), providerConfig).default({}),
    })
    .prefault({}),
  session: z
    .strictObject({
      writeLock: z.strictObject({ acquireTimeoutMs: positiveInt.default(60000) }).prefault({}),
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
      backend: z.enum(["sqlite", "postgres"]).default("sqlite"),
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
  messages: z.strictObject({ queue: queueConfig.prefault({}) }).prefault({}),
  gateway: z
    .strictObject({
      port: z.number().int().min(0).max(65535).default(18789),
      bind: z.string().default("loopback"),
      auth: z
        .strictObject({
          token: z.string().min(1).optional(),
          // SPEC 21: per-client grants; several tenants' bridges on one gateway
          tokens: z.array(tokenGrant).default([]),
        })
        .prefault({}),
      tickIntervalMs: positiveInt.default(30000),
      maxPayload: positiveInt.default(25 * 1024 * 1024),
      maxBufferedBytes: positiveInt.default(8 * 1024 * 1024),
      slowConsumerMs: nonNegativeInt.default(5000),
      maxPageBytes: positiveInt.default(2 * 1024 * 1024),
      // connections that have not completed `connect`: above either cap new ones are closed at once (1013)
      preAuth: z
        .strictObject({ maxConnections: positiveInt.default(128), maxConnectionsPerAddress: positiveInt.default(32) })
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
      shutdownGraceMs: nonNegativeInt.default(10000),
      // browser origins (scheme://host[:port]) allowed besides loopback ones and the gateway's own address
      allowedOrigins: z.array(z.string().min(1)).default([]),
    })
    .prefault({}),
  // stuck-session diagnostics (SPEC 13; src/diagnostics/): off by default, and then they cost nothing
  diagnostics: z
    .strictObject({
      enabled: z.boolean().default(false),
      stuckSessionWarnMs: positiveInt.default(120000),
      // default max(300000, 3 × stuckSessionWarnMs): diagnostics/classify.ts defaultAbortMs
      stuckSessionAbortMs: positiveInt.optional(),
    })
    // an abort threshold at or below the warn threshold is refused at load (check.ts)
    .prefault({}),
  skills: z.strictObject({ dirs: z.array(z.string()).default([]) }).prefault({}),
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
      load: z.strictObject({ paths: z.array(z.string()).default([]) }).prefault({}),
      entries: z
        .record(
          z.string(),
          // `config` is handed to the plugin as api.config
          z.strictObject({ enabled: z.boolean().default(true), config: z.record(z.string(), z.unknown()).optional() }),
        )
        .default({}),
    })
    .prefault({}),
  security: z.strictObject({ installPolicy: installPolicy.prefault({}) }).prefault({}),
  tools: z.strictObject({ exec: execToolConfig.prefault({}) }).prefault({}),
  /** the audit ledger (SPEC 11/20): metadata-only rows of run and tool starts and ends, pruned at start and hourly */
  audit: z
    .strictObject({
      retentionDays: positiveInt.default(30),
      maxRows: positiveInt.default(100000),
      /** rows that may wait to be written; beyond it new rows are dropped and counted, and a run never waits */
      queueSize: positiveInt.default(10000),
    })
    .prefault({}),
  /** SPEC 17: scheduled isolated turns in the `cron` lane (cron/scheduler.ts) */
  cron: z
    .strictObject({
      /** false: the gateway runs no job (config or RPC); cron.list still answers */
      enabled: z.boolean().default(true),
      /** runs missed while the gateway was down: "once" runs each such job once at start, "skip" records them skipped */
      catchUp: z.enum(["once", "skip"]).default("once"),
      jobs: z.array(cronJobSchema.superRefine(checkJobTimes)).default([]),
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
export type ExecToolConfig = z.infer<typeof execToolConfig>;
export type CronConfig = LoopgateConfig["cron"];
export type QueueMode = (typeof queueModes)[number];
export type DropPolicy = (typeof dropPolicies)[number];
