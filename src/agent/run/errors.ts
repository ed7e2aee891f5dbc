import { ProviderError } from "../../providers/types.js";

/** Raised as the abort reason when the run timeout expires, so the outcome is "timeout", not "aborted". */
export class RunTimeoutError extends Error {
  constructor(ms: number) {
    super(`run timed out after ${Math.round(ms / 1000)} s`);
    this.name = "RunTimeoutError";
  }
}

/** A run that failed before the loop could start (context too big, provider misconfigured, session busy). */
export class RunSetupError extends Error {
  readonly kind: string;
  constructor(kind: string, message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = "RunSetupError";
    this.kind = kind;
  }
}

/** The error kinds clients see (chat `errorKind`, lifecycle `kind`). */
export function errorKind(err: unknown): string {
  if (err instanceof ProviderError) {
    if (err.kind === "rate_limit" || err.kind === "context_length" || err.kind === "timeout") return err.kind;
    if (err.kind === "bad_request" && /refus|safety|content policy/i.test(err.message)) return "refusal";
    return "unknown";
  }
  if (err instanceof RunSetupError) return err.kind;
  // the session's write lock (file lock, or a Postgres lease) stayed held past its acquire timeout by another writer:
  // both lock ports throw an error of this name; a client can retry later, unlike an unknown failure
  if (err instanceof Error && err.name === "SessionBusyError") return "session_busy";
  // errors of the run's own phases (compaction, fallback) carry the kind clients should see
  const kind: unknown = err instanceof Error ? Reflect.get(err, "kind") : undefined;
  if (typeof kind === "string") return kind;
  return "unknown";
}
