import type { WebSocket } from "../client/ws-lib.js";

/**
 * `ws` checks `maxPayload` against each frame's declared length as soon as its header arrives, before buffering
 * any of it: the only place where a stranger's 24 MiB frame can be refused after 64 KiB instead of after 24 MiB.
 * The server is therefore created with the pre-auth limit, and a connection that authenticates gets the full
 * limit here. `ws` (8.x) has no public setter for it, so this reaches the receiver's field, and throws when it is
 * not there (message-limit.test.ts fails on a `ws` upgrade that renames it).
 */
interface ReceiverLike {
  _maxPayload: number;
}

function receiverOf(ws: WebSocket): ReceiverLike | undefined {
  const receiver = (ws as unknown as { _receiver?: Partial<ReceiverLike> })._receiver;
  return typeof receiver?._maxPayload === "number" ? (receiver as ReceiverLike) : undefined;
}

export function setMessageLimit(ws: WebSocket, bytes: number): void {
  const receiver = receiverOf(ws);
  if (!receiver) throw new Error("ws: cannot find the receiver's maxPayload (was the ws package upgraded?)");
  receiver._maxPayload = bytes;
}
