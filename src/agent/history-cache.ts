import type { ChatMessage } from "../providers/types.js";
import type { SessionRecord, Store, TranscriptRow } from "../storage/types.js";
import { isContextRow, messagesFromContextRows } from "./run/compaction-summary.js";

interface CachedHistory {
  /** a deleted and re-created session gets a new id, so its old cached rows are never reused */
  sessionId: string;
  generation: number;
  /** highest transcript seq already folded into `messages` */
  lastSeq: number;
  messages: ChatMessage[];
  /** transcript seq of each message (0 for the summary of a compaction, which is no message row) */
  seqs: number[];
  /** serialized size of `messages`, kept incrementally */
  chars: number;
}

export interface LoadedHistory {
  messages: ChatMessage[];
  seqs: number[];
  chars: number;
  /** the session row the load read (under the caller's write lock); absent for a session not stored */
  session?: SessionRecord;
}

/**
 * The session history a run sends to the model, kept between turns so a turn reads only the rows written since
 * the last one (by this process or any other) instead of re-reading and re-parsing the whole transcript.
 * The store stays the source of truth: every load asks it for rows after the cached seq, under the session write
 * lock, so rows another process appended are picked up. A history starts at the latest compaction summary; a new
 * compaction row makes the next load start over from it. Bounded (LRU) so memory does not grow with sessions.
 */
export class HistoryCache {
  private readonly entries = new Map<string, CachedHistory>();
  constructor(private readonly maxSessions = 128) {}

  async load(store: Store, sessionKey: string): Promise<LoadedHistory> {
    const session = await store.getSession(sessionKey);
    const generation = session?.generation ?? 1;
    const sessionId = session?.sessionId ?? "";
    let entry = this.entries.get(sessionKey);
    if (!entry || entry.generation !== generation || entry.sessionId !== sessionId) {
      entry = await coldLoad(store, sessionKey, sessionId, generation);
    } else {
      const rows = await store.readTranscript(sessionKey, { generation, afterSeq: entry.lastSeq, imageData: true });
      // A gap means rows were rewritten under us; a compaction row means the history now starts at its summary.
      const stale = rows.length > 0 && rows[0].seq !== entry.lastSeq + 1;
      if (stale || rows.some((r) => r.kind === "compaction"))
        entry = await coldLoad(store, sessionKey, sessionId, generation);
      else fold(entry, rows);
    }
    this.entries.delete(sessionKey);
    this.entries.set(sessionKey, entry);
    if (this.entries.size > this.maxSessions) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    // copies: the loop appends to what it is given
    // the row goes back too: the run takes what else it needs of it (its auth pins) without reading it again
    return {
      messages: entry.messages.slice(),
      seqs: entry.seqs.slice(),
      chars: entry.chars,
      ...(session ? { session } : {}),
    };
  }

  forget(sessionKey: string): void {
    this.entries.delete(sessionKey);
  }
}

async function coldLoad(
  store: Store,
  sessionKey: string,
  sessionId: string,
  generation: number,
): Promise<CachedHistory> {
  const rows = await store.readContextRows(sessionKey, { generation });
  const messages = messagesFromContextRows(rows);
  const messageRows = rows.filter(isContextRow);
  // messagesFromContextRows puts the summary (if any) first, then the message rows in order
  const seqs = [...(messages.length > messageRows.length ? [0] : []), ...messageRows.map((r) => r.seq)];
  const chars = messages.reduce((n, m) => n + JSON.stringify(m).length + 1, 0);
  const lastSeq = rows.reduce((max, r) => Math.max(max, r.seq), 0);
  return { sessionId, generation, lastSeq, messages, seqs, chars };
}

function fold(entry: CachedHistory, rows: TranscriptRow[]): void {
  for (const row of rows) {
    entry.lastSeq = row.seq;
    if (isContextRow(row)) {
      entry.messages.push(row.message);
      entry.seqs.push(row.seq);
      entry.chars += JSON.stringify(row.message).length + 1;
    }
  }
}
