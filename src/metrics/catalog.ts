import { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * Every `loopgate_*` metric a gateway exports (SPEC 26), defined once here with its help text and labels. Labels are
 * low-cardinality by rule: an agent id, a provider and model from config, a status, outcome, reason or lane kind;
 * never a session key, run id, token, user text or error message. Counters and histograms are fed as things happen
 * (run-metrics.ts, model-call-meter.ts, timed-store.ts); gauges are read at scrape time (gauges.ts).
 */

/** Run lengths: a quick answer is a second or two, an agent turn with tools minutes. */
const RUN_SECONDS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
/** How long until the first streamed token: lanes, prepare and the model's first byte. */
const FIRST_TOKEN_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 60];
/** One model call, from request to its last chunk. */
const MODEL_CALL_SECONDS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
/** One store call: SQLite answers in microseconds, Postgres over the network in milliseconds. */
const STORE_SECONDS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

export class LoopgateMetrics {
  /** this node's own metrics (the process's are in process-metrics.ts, one set per process) */
  readonly registry = new Registry();

  readonly runs = new Counter({
    name: "loopgate_runs_total",
    help: "Runs that ended on this node, by agent and terminal status (ok, error, timeout, aborted)",
    labelNames: ["agent", "status"] as const,
    registers: [this.registry],
  });

  readonly runDuration = new Histogram({
    name: "loopgate_run_duration_seconds",
    help: "From a run's start (it holds its lanes) to its end, by agent and terminal status",
    labelNames: ["agent", "status"] as const,
    buckets: RUN_SECONDS,
    registers: [this.registry],
  });

  readonly timeToFirstToken = new Histogram({
    name: "loopgate_run_time_to_first_token_seconds",
    help: "From a run's start to its first streamed assistant text, by agent",
    labelNames: ["agent"] as const,
    buckets: FIRST_TOKEN_SECONDS,
    registers: [this.registry],
  });

  readonly modelCalls = new Counter({
    name: "loopgate_model_calls_total",
    help: "Model calls that reached a provider (retries, fallbacks and compaction summaries included), by outcome: ok, a provider error kind, aborted, incomplete",
    labelNames: ["provider", "model", "outcome"] as const,
    registers: [this.registry],
  });

  readonly modelCallDuration = new Histogram({
    name: "loopgate_model_call_duration_seconds",
    help: "One model call, from its request to its last chunk or its error",
    labelNames: ["provider", "model"] as const,
    buckets: MODEL_CALL_SECONDS,
    registers: [this.registry],
  });

  readonly modelTokens = new Counter({
    name: "loopgate_model_tokens_total",
    help: "Tokens the providers reported, by type: input (cached included), output, cache_read, cache_write",
    labelNames: ["provider", "model", "type"] as const,
    registers: [this.registry],
  });

  readonly modelCost = new Counter({
    name: "loopgate_model_cost_usd_total",
    help: "Estimated spend in USD from the reported usage and the model's configured cost (models without a cost add nothing)",
    labelNames: ["provider", "model"] as const,
    registers: [this.registry],
  });

  readonly retries = new Counter({
    name: "loopgate_model_retries_total",
    help: "Model calls tried again after a retryable error, by reason (rate_limit, server, network)",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly fallbacks = new Counter({
    name: "loopgate_model_fallbacks_total",
    help: "Runs that moved to the next model of their chain, by the reason the model failed",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly authRotations = new Counter({
    name: "loopgate_auth_rotations_total",
    help: "Moves to another auth profile of the same provider inside a run, by reason (rate_limit, billing, auth)",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly compactions = new Counter({
    name: "loopgate_compactions_total",
    help: "History compactions that ended, by reason (threshold, overflow, manual) and outcome",
    labelNames: ["reason", "outcome"] as const,
    registers: [this.registry],
  });

  readonly toolCalls = new Counter({
    name: "loopgate_tool_calls_total",
    help: "Tool calls that ended, by outcome: ok, error, blocked, steer (skipped for a steering message), aborted",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  readonly storeCalls = new Histogram({
    name: "loopgate_store_call_duration_seconds",
    help: "Calls into the store (SQLite or Postgres) by method and outcome (ok, error)",
    labelNames: ["method", "outcome"] as const,
    buckets: STORE_SECONDS,
    registers: [this.registry],
  });

  /** A gauge read at scrape time: `read` is called once per scrape and sets the value(s). */
  gauge<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    read: (gauge: Gauge<L>) => void,
  ): Gauge<L> {
    return new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        read(this);
      },
    });
  }
}

/**
 * A label value from an event (a reason, an outcome, a status): codes come from providers, plugins and the model,
 * so a value that does not look like a short identifier could be text, and is replaced rather than exported.
 */
const LABEL_CODE = /^[A-Za-z0-9_.:/-]{1,64}$/;
export function labelCode(value: string | undefined): string {
  if (value === undefined || value === "") return "unknown";
  return LABEL_CODE.test(value) ? value : "other";
}
