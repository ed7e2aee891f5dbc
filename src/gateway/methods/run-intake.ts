import { prepareAttachments } from "../../agent/attachments.js";
import { parseSlashCommand } from "../../agent/run/index.js";
import type { AcceptedRun, IntakeSight } from "../../agent/service.js";
import { ErrorCodes } from "../../protocol/frames.js";
import type { AgentAccepted } from "../../protocol/payloads.js";
import type { AgentRequest } from "../../protocol/run.js";
import { formatBytes } from "../../tools/image-prepare.js";
import type { CallerConnection, GatewayContext, Reply } from "../context.js";
import { GatewayError } from "../errors.js";
import { countAcceptedRun, refuseOverSpendLimits } from "../spend-intake.js";

/**
 * The shared intake of `agent` and `chat.send`: the caller's checks (`admit`), attachments made ready
 * (agent/attachments.ts), durable accept, subscribe the caller to the session, answer `accepted` — all before any
 * event of the run is delivered and before any model work starts (the run itself begins after the current tick).
 * The session is resolved once and the store read once, by the queue's intake; `admit` runs between that read and
 * the durable write, and the answer says whether the message created its session.
 */
export async function acceptRun(
  gw: GatewayContext,
  conn: CallerConnection,
  params: AgentRequest,
  reply: Reply,
): Promise<AcceptedRun> {
  // the run id is the idempotency key: its events wait until the answer is sent and the caller watches it
  gw.broadcaster.hold(params.idempotencyKey);
  try {
    // a client denied in-band control never interrupts, even where the session's queue mode is "interrupt"
    const token = conn.access.tokenIdentity;
    const origin = {
      actor: conn.actor,
      ...(conn.access.commandsDeniedBy ? { control: false as const } : {}),
      // the run's spend counts against its token's budgets, and the cost ledger names it
      ...(token !== undefined ? { token } : {}),
    };
    const accepted = await gw.service.accept(params, origin, (sight) => admit(gw, conn, params, sight));
    // OpenClaw's `agent` label names the run's session (as sessions.patch label does); sessions.resolve finds it
    if (!accepted.existing && params.label !== undefined)
      await gw.service.patchSession(accepted.sessionKey, { label: params.label });
    if (!accepted.existing) {
      countAcceptedRun(gw, conn, accepted.runId);
      conn.access.recordStarted(accepted.runId, accepted.sessionKey);
      gw.broadcaster.watchRun(accepted.runId, conn);
      // a first message creates its session: followers of sessions.changed hear of it
      if (accepted.newSession) gw.service.sessionChanged(accepted.sessionKey, "created");
    }
    const payload: AgentAccepted = {
      runId: accepted.runId,
      sessionKey: accepted.sessionKey,
      status: "accepted",
      acceptedAt: accepted.acceptedAt,
      receipt: accepted.receipt,
    };
    reply.ok(payload);
    gw.runLog.accepted(accepted, params);
    return accepted;
  } finally {
    gw.broadcaster.release(params.idempotencyKey);
  }
}

/** decoded bytes of base64 `content`, from its length (without decoding it) */
function decodedBytes(content: string): number {
  const padding = content.endsWith("==") ? 2 : content.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((content.length * 3) / 4) - padding);
}

/**
 * One connection's attachments being prepared are capped in bytes (gateway.attachments.maxInFlightBytesPerConnection):
 * a client that sends message after message of attachments without waiting would otherwise hold all of them, decoded,
 * while they wait for the image-work limit. Over the cap the send is refused as retryable, before anything is stored.
 */
async function withAttachmentBytes<T>(
  gw: GatewayContext,
  conn: CallerConnection,
  params: AgentRequest,
  prepare: () => Promise<T>,
): Promise<T> {
  const bytes = (params.attachments ?? []).reduce((sum, a) => sum + decodedBytes(a.content), 0);
  if (bytes === 0) return prepare();
  const cap = gw.limits.maxAttachmentBytesInFlight;
  const held = conn.attachmentsInFlight;
  if (held.bytes + bytes > cap) {
    throw new GatewayError({
      code: ErrorCodes.unavailable,
      message: `params.attachments: ${formatBytes(bytes)} of attachments on top of the ${formatBytes(held.bytes)} this connection has still being prepared is over gateway.attachments.maxInFlightBytesPerConnection (${formatBytes(cap)}); wait for the earlier sends to be accepted`,
      retryable: held.bytes > 0,
    });
  }
  held.bytes += bytes;
  try {
    return await prepare();
  } finally {
    held.bytes -= bytes;
  }
}

/**
 * The gateway's checks, between the intake's read and its durable write (SPEC 21, SPEC 25): the target session must
 * be granted, and an idempotent repeat of an existing run answers with that run's status and final, so it needs the
 * right to see that run; then in-band control, the spend limits (a repeat starts nothing: it is not counted or
 * refused by them), and the attachments: images are scaled and text files inlined before the durable accept, so the
 * stored row is what the model gets.
 */
async function admit(
  gw: GatewayContext,
  conn: CallerConnection,
  params: AgentRequest,
  sight: IntakeSight,
): Promise<AgentRequest | undefined> {
  if (sight.existing) {
    conn.access.requireRunVisible(sight.existing.runId, sight.existing.sessionKey);
    refuseDeniedControl(conn, params);
    return undefined;
  }
  conn.access.requireSend(sight.sessionKey);
  refuseDeniedControl(conn, params);
  await refuseOverSpendLimits(gw, conn, params, sight.sessionKey);
  return withAttachmentBytes(gw, conn, params, () => prepareAttachments(params, { imageWork: gw.imageWork }));
}

/**
 * SPEC 21: a token with `commands: false` may not use in-band control, which acts on the whole session (other
 * clients' runs and queued input). Refused before anything is stored, naming the param and the config key; the
 * text is not sent on as plain text, so the client learns at once that nothing was stopped.
 */
function refuseDeniedControl(conn: CallerConnection, req: AgentRequest): void {
  const key = conn.access.commandsDeniedBy;
  if (!key) return;
  const deny = (param: string, what: string, hint = "") =>
    new GatewayError({
      code: ErrorCodes.forbidden,
      message: `params.${param}: ${what} is in-band control, which this token may not use (${key} is false)${hint}`,
    });
  const slash = parseSlashCommand(req.message ?? "");
  if (slash) throw deny("message", `"/${slash.command}"`, "; chat.abort stops the runs this client started");
  if (req.queueMode === "interrupt") throw deny("queueMode", '"interrupt"');
}
