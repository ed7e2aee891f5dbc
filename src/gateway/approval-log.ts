import type { ExecApprovals } from "../agent/exec-approvals.js";
import type { Logger } from "../infra/logger.js";
import { redactText } from "../tools/sanitize.js";

/**
 * One log line per exec approval step, so whoever runs the gateway sees that something waits for them and what
 * became of it: `exec approval requested` (id, session, masked command, expiry), `exec approval answered`
 * (decision, by whom) and `exec approval expired`. The command is masked: logs are not where approvers read it.
 * Returns the unsubscribe.
 */
export function logExecApprovals(approvals: ExecApprovals, logger: Logger): () => void {
  return approvals.subscribe((ev) => {
    if (ev.type === "requested") {
      const r = ev.request;
      logger.info("exec approval requested", {
        id: r.id,
        session: r.sessionKey,
        command: redactText(r.command),
        expires: new Date(r.expiresAtMs).toISOString(),
      });
      return;
    }
    const r = ev.resolved;
    if (r.status === "expired") logger.info("exec approval expired", { id: r.id, session: r.sessionKey });
    else if (r.reason === "user")
      logger.info("exec approval answered", { id: r.id, session: r.sessionKey, decision: r.decision, by: ev.by });
    else logger.info("exec approval cancelled", { id: r.id, session: r.sessionKey, reason: "the run stopped waiting" });
  });
}
