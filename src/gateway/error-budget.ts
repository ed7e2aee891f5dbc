import type { ErrorShape } from "../protocol/frames.js";

/**
 * An error reply may be as large as the request it answers, and never smaller than this: a 40-byte request with
 * an unknown method still gets the list of methods. Without a bound a small hostile request could make us build
 * and send a reply many times its size (one request with a million unknown keys once got an 83 MB reply).
 */
export const MIN_ERROR_REPLY_BYTES = 1024;

export function errorReplyBudget(requestBytes: number): number {
  return Math.max(requestBytes, MIN_ERROR_REPLY_BYTES);
}

const ELLIPSIS = "…";

/**
 * The error response frame for `id`, made to fit `budget` bytes: first without `details`, then with the message
 * cut. Code, retryable and id always survive, so the client can still tell what failed.
 */
export function errorFrameWithin(id: string, error: ErrorShape, budget: number): string {
  const frame = (e: ErrorShape) => JSON.stringify({ type: "res", id, ok: false, error: e });
  const full = frame(error);
  if (Buffer.byteLength(full) <= budget) return full;
  const { details: _dropped, ...bare } = error;
  const withoutDetails = frame(bare);
  if (Buffer.byteLength(withoutDetails) <= budget) return withoutDetails;
  // cut the message until it fits: JSON escapes make bytes and characters differ, so measure each try
  let keep = bare.message.length;
  while (keep > 0) {
    const over = Buffer.byteLength(frame({ ...bare, message: bare.message.slice(0, keep) + ELLIPSIS })) - budget;
    if (over <= 0) break;
    keep = Math.max(0, keep - Math.max(over, Math.ceil(keep / 4)));
  }
  return frame({ ...bare, message: bare.message.slice(0, keep) + ELLIPSIS });
}
