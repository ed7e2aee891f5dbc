import type { AcceptedRun } from "../../agent/service.js";
import type { AgentAccepted } from "../../protocol/payloads.js";
import type { AgentRequest } from "../../protocol/run.js";
import type { CallerConnection, GatewayContext, Reply } from "../context.js";

/**
 * The shared intake of `agent` and `chat.send`: durable accept, subscribe the caller to the session, answer
 * `accepted` — all before any event of the run is delivered and before any model work starts (the run itself
 * begins after the current tick).
 */
export function acceptRun(gw: GatewayContext, conn: CallerConnection, req: AgentRequest, reply: Reply): AcceptedRun {
  gw.broadcaster.hold();
  try {
    const accepted = gw.service.accept(req);
    conn.watchSession(accepted.sessionKey);
    const payload: AgentAccepted = {
      runId: accepted.runId,
      sessionKey: accepted.sessionKey,
      status: "accepted",
      acceptedAt: accepted.acceptedAt,
      receipt: accepted.receipt,
    };
    reply.ok(payload);
    gw.runLog.accepted(accepted, req);
    return accepted;
  } finally {
    gw.broadcaster.release();
  }
}
