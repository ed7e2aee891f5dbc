import type { ChatMessage } from "../providers/types.js";
import type { Store } from "../storage/types.js";

interface CachedHistory {
  /** a deleted and re-created session gets a new id, so its old cached rows are never reused */
  sessionId: string;
  generation: number;
  /** highest transcript seq already folded into `messages` */
  lastSeq: number;
  messages: ChatMessage[];
  /** serialized size of `messages`, kept incrementally for the context-window check */
  chars: number;
}

/**
 * The session history a run sends to the model, kept between turns so a turn reads only the rows written since
 * the last one (by this process or any other) instead of re-reading and re-parsing the whole transcript.
 * The store stays the source of truth: every load asks it for rows after the cached seq, under the session write
 * lock, so rows another process appended are picked up. Bounded (LRU) so memory does not grow with sessions.
 */
export class HistoryCache {
  private readonly entries = new Map<string, CachedHistory>();
  constructor(private readonly maxSessions = 128) {}

  load(store: Store, sessionKey: string): { messages: ChatMessage[]; chars: number } {
    const session = store.getSession(sessionKey);
    const generation = session?.generation ?? 1;
    const sessionId = session?.sessionId ?? "";
    let entry = this.entries.get(sessionKey);
    if (!entry || entry.generation !== generation || entry.sessionId !== sessionId) {
      entry = { sessionId, generation, lastSeq: 0, messages: [], chars: 0 };
    }
    this.entries.delete(sessionKey);
    this.entries.set(sessionKey, entry);
    if (this.entries.size > this.maxSessions) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    const rows = store.readTranscript(sessionKey, { generation, afterSeq: entry.lastSeq });
    if (rows.length > 0 && rows[0].seq !== entry.lastSeq + 1 && entry.lastSeq !== 0) {
      // A gap means rows were rewritten under us (truncation, compaction): start over from the store.
      this.entries.delete(sessionKey);
      return this.load(store, sessionKey);
    }
    for (const row of rows) {
      entry.lastSeq = row.seq;
      if (row.kind === "message" && row.message) {
        entry.messages.push(row.message);
        entry.chars += JSON.stringify(row.message).length + 1;
      }
    }
    // a copy: the loop appends to what it is given
    return { messages: entry.messages.slice(), chars: entry.chars };
  }

  forget(sessionKey: string): void {
    this.entries.delete(sessionKey);
  }
}
