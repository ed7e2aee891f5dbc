import type { EndedBy, Receipt } from "../protocol/run.js";
import type { QueueContext, RunOrigin } from "./types.js";

/**
 * In-band control (SPEC 21): `/stop` and queueMode "interrupt" act on the session for any client that may write
 * into it, but never silently. Each run they abort and each queued input they drop ends with who did it and with
 * what (`EndedBy`, and a sentence naming both), and the commanding message's receipt says what it did.
 */

/** The abort reason of a running turn that in-band control stopped; the run's error is its message. */
export class InBandAbort extends Error {
  constructor(readonly endedBy: EndedBy) {
    super(endedText("stopped", endedBy));
    this.name = "InBandAbort";
  }
}

/** `stopped by "/stop" from bridge-b`, `dropped by queueMode "interrupt" from bridge-b` */
export function endedText(what: "stopped" | "dropped", by: EndedBy): string {
  const command = by.command.startsWith("/") ? JSON.stringify(by.command) : by.command;
  return `${what} by ${command} from ${by.actor}`;
}

/** Who stopped the run whose signal this is, when in-band control did. */
export function endedByOf(signal: AbortSignal | undefined): EndedBy | undefined {
  return signal?.aborted && signal.reason instanceof InBandAbort ? signal.reason.endedBy : undefined;
}

/**
 * The control an interrupting message exercises: its slash command (`/stop`: a message the agent's command parser
 * gives a mode of its own), else its queue mode.
 */
export function controlOf(ctx: QueueContext, message: string, origin: RunOrigin | undefined): EndedBy {
  const text = message.trim();
  const isCommand = ctx.deps.commandMode?.(text) !== undefined;
  const command = isCommand ? text.split(/\s/, 1)[0].toLowerCase() : 'queueMode "interrupt"';
  return { actor: origin?.actor ?? "unknown", command };
}

/** The receipt of a message that interrupted the session: what it stopped and dropped, also in words. */
export function interruptedReceipt(by: EndedBy, stopped: string[], dropped: string[]): Receipt {
  const runs = `stopped ${stopped.length} run${stopped.length === 1 ? "" : "s"}`;
  return {
    kind: "interrupted",
    command: by.command,
    stopped,
    dropped,
    summary: `${runs}, dropped ${dropped.length} queued`,
  };
}
