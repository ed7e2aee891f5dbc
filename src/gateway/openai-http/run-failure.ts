import type { AgentFinal } from "../../protocol/run.js";
import { OpenAiHttpError } from "./errors.js";

/**
 * A run that ended without an answer, as the HTTP error its request gets: a spent budget is 429 (OpenAI's
 * insufficient_quota), a run past its timeout 504, an aborted or failed one 500, each with the run's own error text
 * (what a WebSocket client reads in the final) and its run id.
 */
export function runFailure(final: AgentFinal): OpenAiHttpError | undefined {
  if (final.status === "ok") return undefined;
  const why = final.error ?? final.stopReason ?? final.summary;
  const message = `run ${final.runId} ${final.summary === "aborted" ? "was aborted" : "failed"}: ${why}`;
  if (final.stopReason === "budget_exceeded" || /^budget /.test(final.error ?? ""))
    return new OpenAiHttpError(429, message, { type: "insufficient_quota", code: "budget_exceeded" });
  if (final.status === "timeout")
    return new OpenAiHttpError(504, message, { type: "server_error", code: "run_timeout" });
  if (final.summary === "aborted") return new OpenAiHttpError(500, message, { code: "run_aborted" });
  return new OpenAiHttpError(500, message, { code: "run_failed" });
}
