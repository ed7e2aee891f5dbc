/**
 * What every paginated reply shares: an opaque cursor (the reply's `nextCursor`, passed back as `params.cursor`)
 * and a byte budget per page. Cursors are base64url JSON so that clients treat them as tokens, while the gateway
 * can still tell a stale or foreign cursor from a good one and say so.
 */
import { ErrorCodes } from "../protocol/frames.js";
import { GatewayError } from "./errors.js";

export type CursorFields = Record<string, string | number>;

export function encodeCursor(kind: string, fields: CursorFields): string {
  return Buffer.from(JSON.stringify({ ...fields, $: kind }), "utf8").toString("base64url");
}

function badCursor(kind: string, why: string): GatewayError {
  return new GatewayError({
    code: ErrorCodes.invalidParams,
    message: `params.cursor: ${why}; pass the nextCursor of the previous ${kind} page, or no cursor for the first page`,
  });
}

/**
 * Reads back a cursor made by `encodeCursor(kind, …)`. `shape` names each field and its type; anything else is
 * refused with an error that says which method's cursor was expected.
 */
export function decodeCursor<F extends CursorFields>(
  kind: string,
  cursor: string,
  shape: { [K in keyof F]: F[K] extends number ? "number" : "string" },
): F {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw badCursor(kind, "not a cursor this gateway made");
  }
  if (!raw || typeof raw !== "object" || (raw as { $?: unknown }).$ !== kind) {
    throw badCursor(kind, `not a ${kind} cursor`);
  }
  const record = raw as Record<string, unknown>;
  for (const [name, type] of Object.entries(shape)) {
    const value = record[name];
    if (typeof value !== type || (type === "number" && !Number.isSafeInteger(value))) {
      throw badCursor(kind, "not a cursor this gateway made");
    }
  }
  return record as F;
}

/**
 * Counts the bytes of a page as entries are added. The envelope (everything but the entries) is counted up front;
 * the first entry is always taken, even over budget, so that paging always moves on.
 */
export class PageBudget {
  private used: number;
  private taken = 0;
  private readonly budget: number;

  constructor(budget: number, envelopeBytes: number) {
    this.budget = budget;
    this.used = envelopeBytes;
  }

  /** Bytes the page still has room for (0 when full): the most worth reading for its next entries. */
  left(): number {
    return Math.max(0, this.budget - this.used);
  }

  /** Whether the entry fits; if it does, it is counted. */
  take(entryJson: string): boolean {
    // the comma between array items
    const bytes = Buffer.byteLength(entryJson, "utf8") + (this.taken > 0 ? 1 : 0);
    if (this.taken > 0 && this.used + bytes > this.budget) return false;
    this.used += bytes;
    this.taken++;
    return true;
  }
}

/** Room kept in the envelope for the `nextCursor` field that may be added once the page is known. */
export const CURSOR_ROOM_BYTES = 256;
