/**
 * One page of `sessions.list`: newest update first, at most `limit` sessions the caller may see, within the page's
 * byte budget. The cursor is the last session returned, so a session created or updated while a client pages
 * moves to the front (where the next listing from the start finds it) instead of shifting every later page.
 */

import type { SessionListPoint, SessionRecord, SessionService } from "../agent/session-service.js";
import type { SessionInfo, SessionsListResult } from "../protocol/payloads.js";
import { CURSOR_ROOM_BYTES, decodeCursor, encodeCursor, PageBudget } from "./paging.js";

const KIND = "sessions.list";
/** sessions read from the store at a time */
const READ_BATCH = 100;

type SessionsCursor = { u: number; k: string };

export interface SessionsPageRequest {
  limit: number;
  agentId?: string;
  cursor?: string;
  maxBytes: number;
  /** a client without read scope lists only the sessions it may see */
  canSee(key: string, session: SessionRecord): boolean;
  info(s: SessionRecord): SessionInfo | Promise<SessionInfo>;
}

function startPoint(cursor: string | undefined): SessionListPoint | undefined {
  if (cursor === undefined) return undefined;
  const c = decodeCursor<SessionsCursor>(KIND, cursor, { u: "number", k: "string" });
  return { updatedAt: c.u, key: c.k };
}

export async function readSessionsPage(
  store: Pick<SessionService, "listSessions">,
  req: SessionsPageRequest,
): Promise<SessionsListResult> {
  const envelope = JSON.stringify({ sessions: [], count: Number.MAX_SAFE_INTEGER });
  const budget = new PageBudget(req.maxBytes, Buffer.byteLength(envelope) + CURSOR_ROOM_BYTES);
  const sessions: SessionInfo[] = [];
  let point = startPoint(req.cursor);
  let last: SessionListPoint | undefined;
  let more = false;
  scan: while (sessions.length < req.limit) {
    const batch = await store.listSessions({ limit: READ_BATCH, agentId: req.agentId, after: point });
    for (const s of batch) {
      if (sessions.length === req.limit) {
        more = true;
        break scan;
      }
      if (!req.canSee(s.key, s)) continue;
      const info = await req.info(s);
      if (!budget.take(JSON.stringify(info))) {
        more = true;
        break scan;
      }
      sessions.push(info);
      last = { updatedAt: s.updatedAt, key: s.key };
    }
    if (batch.length < READ_BATCH) break;
    const end = batch[batch.length - 1];
    point = { updatedAt: end.updatedAt, key: end.key };
  }
  if (!more && last && sessions.length === req.limit) {
    more = (await store.listSessions({ limit: 1, agentId: req.agentId, after: last })).length > 0;
  }
  const page: SessionsListResult = { sessions, count: sessions.length };
  if (more && last) page.nextCursor = encodeCursor(KIND, { u: last.updatedAt, k: last.key });
  return page;
}
