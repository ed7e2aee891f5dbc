/**
 * One page of `chat.history`: the newest rows before a point, at most `limit` of them and no more than the page's
 * byte budget, returned oldest first. Rows are read from the store in small batches, each bounded by the bytes the
 * page has left (the store reads the rows' sizes before the rows), so transcripts of big rows cost one page of
 * memory, not a batch of rows nor the whole transcript.
 */

import type { SessionRecord, SessionService } from "../agent/session-service.js";
import { ErrorCodes } from "../protocol/frames.js";
import type { ChatHistoryResult, HistoryEntry } from "../protocol/payloads.js";
import { GatewayError } from "./errors.js";
import { historyEntry } from "./history-entry.js";
import { CURSOR_ROOM_BYTES, decodeCursor, encodeCursor, PageBudget } from "./paging.js";

const KIND = "chat.history";
/** rows read from the store at a time */
const READ_BATCH = 32;

type HistoryCursor = { s: string; g: number; b: number };

export interface HistoryPageRequest {
  limit: number;
  cursor?: string;
  /** the older seq cursor: rows of the generation with a smaller seq */
  before?: number;
  /** which transcript generation (default the session's current one); a cursor carries its own */
  generation?: number;
  maxBytes: number;
}

/** Where the page starts: a cursor pins the generation it was made in, so a reset mid-paging does not mix them. */
function startPoint(session: SessionRecord, req: HistoryPageRequest): { generation: number; before?: number } {
  if (req.cursor !== undefined && req.before !== undefined) {
    throw new GatewayError({
      code: ErrorCodes.invalidParams,
      message: "params.cursor: pass cursor or before, not both",
    });
  }
  if (req.cursor !== undefined && req.generation !== undefined) {
    throw new GatewayError({
      code: ErrorCodes.invalidParams,
      message: "params.cursor: pass cursor or generation, not both (a cursor keeps to its own generation)",
    });
  }
  if (req.generation !== undefined && req.generation > session.generation) {
    throw new GatewayError({
      code: ErrorCodes.invalidParams,
      message: `params.generation: session "${session.key}" has generations 1..${session.generation}`,
    });
  }
  if (req.cursor === undefined) return { generation: req.generation ?? session.generation, before: req.before };
  const c = decodeCursor<HistoryCursor>(KIND, req.cursor, { s: "string", g: "number", b: "number" });
  if (c.s !== session.sessionId) {
    throw new GatewayError({
      code: ErrorCodes.invalidParams,
      message: `params.cursor: made for another session than "${session.key}" (or the session was deleted since); start again without a cursor`,
    });
  }
  return { generation: c.g, before: c.b };
}

export async function readHistoryPage(
  store: Pick<SessionService, "readTranscript" | "transcriptSizes">,
  session: SessionRecord,
  req: HistoryPageRequest,
): Promise<ChatHistoryResult> {
  const { generation, before } = startPoint(session, req);
  const head = { sessionKey: session.key, sessionId: session.sessionId, generation };
  const envelope = JSON.stringify({ ...head, messages: [], nextBefore: Number.MAX_SAFE_INTEGER });
  const budget = new PageBudget(req.maxBytes, Buffer.byteLength(envelope) + CURSOR_ROOM_BYTES);
  const picked: HistoryEntry[] = []; // newest first
  let point = before;
  let more = false;
  while (picked.length < req.limit) {
    // a SQLite read answers without a turn of the event loop, and a row of 15 MB takes a while to parse: every
    // heavy step of a page (reading, masking, sending) gets a turn of its own, so other clients are served between
    // them (pages take turns: the handlers build and send one under gw.historyPages)
    await nextTurn();
    const want = Math.min(req.limit - picked.length, READ_BATCH);
    // image bytes are read so that small images can be shown (history-entry.ts keeps the big ones as references);
    // rows are read only as far as the page's bytes left (the first row of a page comes whatever its size), so 32
    // rows of 15 MB are never loaded for one page of 2 MiB, nor one more row than fits
    const rows = await store.readTranscript(session.key, {
      generation,
      limit: want,
      beforeSeq: point,
      imageData: true,
      maxBytes: budget.left(),
      maxBytesStrict: picked.length > 0,
    });
    await nextTurn();
    let full = false;
    for (let i = rows.length - 1; i >= 0; i--) {
      // the same masking as events; the byte budget counts what is actually sent
      const entry = historyEntry(rows[i]);
      if (!budget.take(JSON.stringify(entry))) {
        full = true;
        break;
      }
      picked.push(entry);
    }
    if (full) {
      more = true;
      break;
    }
    if (rows.length === 0) {
      // nothing older fits: more rows exist if the next older one alone is over what is left
      more = picked.length > 0 && (await hasOlder(store, session.key, generation, picked.at(-1)?.seq));
      break;
    }
    point = rows[0].seq;
  }
  const oldest = picked.at(-1)?.seq;
  if (!more && oldest !== undefined && picked.length === req.limit) {
    more = await hasOlder(store, session.key, generation, oldest);
  }
  // the caller serializes the page next: in a turn of its own
  await nextTurn();
  const page: ChatHistoryResult = { ...head, messages: picked.reverse() };
  if (more && oldest !== undefined) {
    page.nextBefore = oldest;
    page.nextCursor = encodeCursor(KIND, { s: session.sessionId, g: generation, b: oldest });
  }
  return page;
}

/** Whether the generation has a row before `seq`: its size is read, not the row. */
async function hasOlder(
  store: Pick<SessionService, "transcriptSizes">,
  key: string,
  generation: number,
  seq: number | undefined,
): Promise<boolean> {
  if (seq === undefined) return false;
  return (await store.transcriptSizes(key, { generation, limit: 1, beforeSeq: seq })).length > 0;
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
