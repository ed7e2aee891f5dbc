/**
 * Model fallback (SPEC 16): when a model fails in a way retrying will not fix, or retries ran out, the run moves to
 * the next model of `agents.defaults.model.fallbacks` / the agent's `model: { primary, fallbacks }`. The history is
 * provider-neutral, so the chain may cross providers and wire APIs.
 *
 * What moves the run on, and what ends it:
 * - moves on: any ProviderError except the two below: auth refused, model not found, still rate limited or
 *   overloaded after retries, network failures, the idle watchdog / timeouts, context still too long after
 *   compaction (a model with a larger window may fit), a response we could not read, and bad_request (most often a
 *   parameter this model or server does not support, e.g. tools on a small local model); also a model whose provider
 *   is unknown or misconfigured (ModelResolutionError, ConfigError): it is skipped and named in the final error.
 * - ends the run: `aborted` (the user cancelled or the run timed out: no other model should start), a content
 *   refusal (another model answering what this one declined is a policy bypass the operator did not ask for), and
 *   any error that is not a model failure (a bug, a tool crash): the next model would hit the same.
 */
import { ConfigError } from "../../config/errors.js";
import { isRefusal } from "../../providers/errors.js";
import { ModelResolutionError } from "../../providers/registry.js";
import { ProviderError, type ProviderErrorKind } from "../../providers/types.js";

/** `agents.defaults.model`, an agent's `model` (a bare ref is a primary without fallbacks). */
export type ModelSelection = string | { primary?: string; fallbacks?: readonly string[] };

/** The models to try, in order, each once. */
export function modelChain(selection: ModelSelection | undefined): string[] {
  if (selection === undefined) return [];
  const refs = typeof selection === "string" ? [selection] : [selection.primary, ...(selection.fallbacks ?? [])];
  const chain: string[] = [];
  for (const ref of refs) if (ref && !chain.includes(ref)) chain.push(ref);
  return chain;
}

/** Why the run left a model: the failure's kind, or `unavailable` for a model that could not be set up. */
export type FallbackReason = Exclude<ProviderErrorKind, "aborted"> | "unavailable";

/** The reason to move to the next model, or undefined when this failure must end the run. */
export function fallbackReason(err: unknown): FallbackReason | undefined {
  if (err instanceof ModelResolutionError || err instanceof ConfigError) return "unavailable";
  if (!(err instanceof ProviderError)) return undefined;
  if (err.kind === "aborted" || isRefusal(err)) return undefined;
  return err.kind;
}

export function shouldFallback(err: unknown): boolean {
  return fallbackReason(err) !== undefined;
}

/** What the run turns into the lifecycle event `{phase:"fallback", from, to, reason}` (and a buffer reset). */
export interface FallbackNotice {
  from: string;
  to: string;
  reason: FallbackReason;
  error: unknown;
}

export interface ModelFailure {
  model: string;
  reason: FallbackReason;
  error: unknown;
}

/** Every model of the chain failed; the message has one line per model saying why. */
export class AllModelsFailedError extends Error {
  readonly failures: readonly ModelFailure[];
  /** the reason of the last model's failure, e.g. for the chat error kind */
  readonly reason: FallbackReason;
  constructor(failures: ModelFailure[]) {
    const lines = failures.map((f) => `- ${f.model}: ${oneLine(f.model, f.error)}`);
    super(`all ${failures.length} models failed:\n${lines.join("\n")}`, { cause: failures.at(-1)?.error });
    this.name = "AllModelsFailedError";
    this.failures = failures;
    this.reason = failures.at(-1)?.reason ?? "unavailable";
  }
}

export interface FallbackOptions<T> {
  /** from modelChain */
  chain: readonly string[];
  /** one model's whole try, retries included (withModelRetries) */
  attempt: (model: string) => Promise<T>;
  /** awaited before the next model starts */
  onFallback?: (notice: FallbackNotice) => void | Promise<void>;
  /** once fired, no further model is started and the failure is rethrown */
  signal?: AbortSignal;
}

/**
 * Try each model of `chain` until one answers: `{ result, model }` names the one that did. A failure that ends the run
 * is rethrown as it is; with a single model its failure is rethrown as it is too (nothing to list). When every model
 * failed, throws AllModelsFailedError.
 */
export async function runWithFallback<T>(opts: FallbackOptions<T>): Promise<{ result: T; model: string }> {
  const { chain } = opts;
  if (chain.length === 0) {
    throw new ModelResolutionError("no model to run: set agents.defaults.model.primary or the agent's model");
  }
  const failures: ModelFailure[] = [];
  for (const [index, model] of chain.entries()) {
    try {
      return { result: await opts.attempt(model), model };
    } catch (err) {
      const reason = fallbackReason(err);
      if (reason === undefined || opts.signal?.aborted || chain.length === 1) throw err;
      failures.push({ model, reason, error: err });
      const next = chain[index + 1];
      if (next !== undefined) await opts.onFallback?.({ from: model, to: next, reason, error: err });
    }
  }
  throw new AllModelsFailedError(failures);
}

/** A failure as one line, without the provider id its message already starts with (the model ref names it). */
function oneLine(model: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const providerId = model.slice(0, model.indexOf("/"));
  const text = message.startsWith(`${providerId}: `) ? message.slice(providerId.length + 2) : message;
  return text.replace(/\s*\n\s*/g, " ").trim() || "failed without a message";
}
