import type http from "node:http";
import { SilentTail } from "../../agent/silent-prefix.js";
import type { AgentEvent } from "../../infra/events.js";
import { agentParamsSchema, parseParams } from "../../protocol/params.js";
import type { AgentFinal, AgentRequest } from "../../protocol/run.js";
import type { GatewayContext, Reply } from "../context.js";
import { acceptRun } from "../methods/run-intake.js";
import type { HttpCaller } from "./caller.js";
import { fromShape } from "./errors.js";
import type { TurnRequest } from "./requests.js";
import type { RunTarget } from "./target.js";

/** A request that asks for its run to be aborted when the client goes away before the answer (default: it goes on). */
export const ABORT_ON_DISCONNECT_HEADER = "x-loopgate-abort-on-disconnect";

export interface AcceptedTurn {
  runId: string;
  sessionKey: string;
  final: AgentFinal;
}

/**
 * The reply's text as the stream shows it: every assistant delta of the run (and `message` tool sends, each its own
 * paragraph, as chat events show them), less a trailing fragment that could still become the silent token
 * (NO_REPLY). Deltas that come before the stream is open wait in `text`.
 */
class DeltaFollower {
  private text = "";
  private sent = 0;
  /** `text` after `sent`, and the end that could still be silent, kept apart: `text` is a rope, read whole only at the end */
  private unsent = "";
  private readonly silent = new SilentTail();
  private live = false;

  constructor(private readonly emit: (delta: string) => void) {}

  onEvent(ev: AgentEvent): void {
    if (ev.stream === "assistant") this.append(ev.data.delta);
    else if (ev.stream === "message") this.append(`${ev.data.text}\n\n`);
  }

  /** the stream is open: what came so far goes out, then each delta as it comes */
  start(): void {
    this.live = true;
    this.flush();
  }

  /** The run ended with `finalText`: what of it the deltas have not shown (a held-back tail) goes out last. */
  finish(finalText: string): void {
    const shown = this.text.slice(0, this.sent);
    if (finalText.startsWith(shown) && finalText.length > shown.length) this.emit(finalText.slice(shown.length));
  }

  private append(delta: string): void {
    if (typeof delta !== "string" || delta === "") return;
    this.text += delta;
    this.unsent += delta;
    this.silent.append(delta);
    if (this.live) this.flush();
  }

  private flush(): void {
    const sendable = this.text.length - this.silent.held();
    if (sendable <= this.sent) return;
    const delta = this.unsent.slice(0, sendable - this.sent);
    this.unsent = this.unsent.slice(sendable - this.sent);
    this.sent = sendable;
    this.emit(delta);
  }
}

/** The run's answer: its reply payloads, less reasoning and error notes (an error is the request's error). */
export function finalText(final: AgentFinal): string {
  return final.result.payloads
    .filter((p) => p.kind !== "reasoning" && p.kind !== "error")
    .map((p) => p.text)
    .join("\n\n");
}

/**
 * One request's turn through the same intake as the `agent` method (run-intake.ts `acceptRun`: session grant, spend
 * limits, durable accept before anything runs, queue modes, lanes, the write lock), then its final. With `onDelta`
 * the run's assistant deltas are handed on as they are produced, from the moment `onAccepted` has opened the
 * stream; the follower listens on the bus for this run only (`subscribeRun`) from before the accept, so no delta
 * is missed. When the client goes away the run continues (its input was accepted, like a WebSocket client that
 * closes) unless the request asked for an abort with `x-loopgate-abort-on-disconnect: 1`.
 */
export async function runHttpTurn(
  gw: GatewayContext,
  caller: HttpCaller,
  http: { req: http.IncomingMessage; res: http.ServerResponse },
  turn: TurnRequest,
  target: RunTarget,
  opts: {
    runId: string;
    onAccepted?: (accepted: { runId: string; sessionKey: string }) => void;
    onDelta?: (delta: string) => void;
  },
): Promise<AcceptedTurn> {
  const params = agentRequest(turn, target, opts.runId);
  const follower = opts.onDelta ? new DeltaFollower(opts.onDelta) : undefined;
  const bus = gw.service.rt.bus;
  const unsubscribe: Array<() => void> = [];
  if (follower) unsubscribe.push(bus.subscribeRun(opts.runId, (ev) => follower.onEvent(ev)));
  try {
    const reply: Reply = { ok: () => {}, error: () => {} };
    const accepted = await acceptRun(gw, caller, params, reply);
    const receipt = accepted.receipt;
    // steered into, or collected with, another message's run: that run's reply is this one's
    if (follower && !accepted.existing && (receipt.kind === "steered" || receipt.kind === "collected"))
      unsubscribe.push(bus.subscribeRun(receipt.into, (ev) => follower.onEvent(ev)));
    let ended = false;
    if (wantsAbortOnDisconnect(http.req)) {
      const abortIfGone = () => {
        if (!ended && !http.res.writableFinished) gw.service.abort(accepted.sessionKey, accepted.runId);
      };
      // the client may have gone while the input was being stored
      if (http.res.destroyed || http.req.socket.destroyed) abortIfGone();
      else http.res.once("close", abortIfGone);
    }
    opts.onAccepted?.({ runId: accepted.runId, sessionKey: accepted.sessionKey });
    follower?.start();
    const final = await gw.service.final(accepted.runId);
    ended = true;
    follower?.finish(finalText(final));
    return { runId: accepted.runId, sessionKey: accepted.sessionKey, final };
  } finally {
    for (const off of unsubscribe) off();
  }
}

function wantsAbortOnDisconnect(req: http.IncomingMessage): boolean {
  const v = req.headers[ABORT_ON_DISCONNECT_HEADER];
  const value = (Array.isArray(v) ? v[0] : v)?.trim().toLowerCase();
  return value === "1" || value === "true" || value === "yes";
}

/** The `agent` method's params for this turn, checked by its own schema (the same limits as a WebSocket client's). */
function agentRequest(turn: TurnRequest, target: RunTarget, runId: string): AgentRequest {
  const raw: AgentRequest = {
    message: turn.message,
    idempotencyKey: runId,
    sessionKey: target.sessionKey,
    ...(target.agentId !== undefined ? { agentId: target.agentId } : {}),
    ...(target.modelAlias !== undefined ? { model: target.modelAlias } : {}),
    ...(turn.system !== undefined ? { extraSystemPrompt: turn.system } : {}),
    // the HTTP client gets token deltas; blocks would hold the reply out of the final (finish.ts)
    blockStreaming: "off",
  };
  const parsed = parseParams(agentParamsSchema, raw);
  if (!parsed.ok) throw fromShape(parsed.error);
  return parsed.value as AgentRequest;
}
