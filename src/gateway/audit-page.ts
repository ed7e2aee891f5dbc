/**
 * One page of `audit.list`: newest first, at most `limit` rows the caller may see. The cursor is the sequence of the
 * last row returned; the ledger's sequences only grow, so rows written while a client pages never shift its pages
 * (they are in front of the first one).
 */

import type { AuditQuery, SessionService } from "../agent/session-service.js";
import type { AuditEvent } from "../protocol/payloads.js";
import { decodeCursor, encodeCursor } from "./paging.js";

const KIND = "audit.list";
/** a token confined to some sessions may see few rows: this many reads at most per page, then the cursor moves on */
const MAX_READS_PER_PAGE = 8;

type AuditCursor = { s: number };

export interface AuditPageRequest {
  query: Omit<AuditQuery, "limit" | "beforeSequence">;
  limit: number;
  cursor?: string;
  /** rows of sessions outside the caller's grant are left out */
  canSee(sessionKey: string): boolean;
}

export async function readAuditPage(
  store: Pick<SessionService, "listAuditEvents">,
  req: AuditPageRequest,
): Promise<{ events: AuditEvent[]; nextCursor?: string }> {
  let before = req.cursor === undefined ? undefined : decodeCursor<AuditCursor>(KIND, req.cursor, { s: "number" }).s;
  const events: AuditEvent[] = [];
  let more = false;
  for (let reads = 0; reads < MAX_READS_PER_PAGE && events.length < req.limit; reads++) {
    // one more than needed tells whether another page exists
    const want = req.limit - events.length + 1;
    const batch = await store.listAuditEvents({ ...req.query, beforeSequence: before, limit: want });
    more = batch.length === want;
    for (const row of batch.slice(0, want - 1)) {
      before = row.sequence;
      if (req.canSee(row.sessionKey)) events.push(row);
    }
    if (!more) break;
  }
  const page: { events: AuditEvent[]; nextCursor?: string } = { events };
  if (more && before !== undefined) page.nextCursor = encodeCursor(KIND, { s: before });
  return page;
}
