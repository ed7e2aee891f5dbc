import type { Clock } from "../infra/clock.js";
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
  /** clock time of the last load, for the idle eviction */
  usedAt: number;
}

export interface HistoryCacheOptions {
  /** most sessions kept */
  maxSessions?: number;
  /** most serialized characters kept over all sessions: a few long sessions must not hold the process's memory */
  maxChars?: number;
  /** a session not loaded for this long is dropped (a turn after that reads its transcript again) */
  idleMs?: number;
  clock?: Pick<Clock, "now">;
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
 * compaction row makes the next load start over from it. Bounded (LRU) in sessions and in characters, and a session
 * idle for `idleMs` is dropped at the next load, so memory follows the sessions in use, not every session ever served.
 */
export class HistoryCache {
  private readonly entries = new Map<string, CachedHistory>();
  private readonly maxSessions: number;
  private readonly maxChars: number;
  private readonly idleMs: number;
  private readonly clock: Pick<Clock, "now">;
  /** sum of the entries' `chars` */
  private chars = 0;

  constructor(opts: HistoryCacheOptions = {}) {
    this.maxSessions = opts.maxSessions ?? 128;
    // ~8 M characters: a few hundred sessions of ordinary length, or a handful at a large model's context size
    this.maxChars = opts.maxChars ?? 8_000_000;
    this.idleMs = opts.idleMs ?? 10 * 60_000;
    this.clock = opts.clock ?? { now: Date.now };
  }

  /** How many sessions and serialized characters are held now. */
  get size(): { sessions: number; chars: number } {
    return { sessions: this.entries.size, chars: this.chars };
  }

  async load(store: Store, sessionKey: string): Promise<LoadedHistory> {
    // A cached session on a store that can: its row and the rows after the cached seq in one read (on Postgres one
    // round trip instead of two per turn). Else the row first, for the generation the rows are read in.
    const cached = this.entries.get(sessionKey);
    const afterSeq = cached?.lastSeq;
    let session: SessionRecord | undefined;
    let delta: TranscriptRow[] | undefined;
    if (afterSeq !== undefined && store.readSessionDelta) {
      ({ session, rows: delta } = await store.readSessionDelta(sessionKey, afterSeq));
    } else session = await store.getSession(sessionKey);
    const generation = session?.generation ?? 1;
    const sessionId = session?.sessionId ?? "";
    let entry = this.entries.get(sessionKey);
    // out of the cache while it is read and folded (fold changes its size), so the character total stays right
    // whether this load ends in the cache or in an error
    this.drop(sessionKey);
    if (!entry || entry.generation !== generation || entry.sessionId !== sessionId) {
      entry = await coldLoad(store, sessionKey, sessionId, generation);
    } else {
      // the rows read with the session fit this entry only if it is the one they were read after (a forget and a
      // new load in between would have replaced it)
      const rows =
        delta !== undefined && entry === cached && entry.lastSeq === afterSeq
          ? delta
          : await store.readTranscript(sessionKey, { generation, afterSeq: entry.lastSeq, imageData: true });
      // A gap means rows were rewritten under us; a compaction row means the history now starts at its summary.
      const stale = rows.length > 0 && rows[0].seq !== entry.lastSeq + 1;
      if (stale || rows.some((r) => r.kind === "compaction"))
        entry = await coldLoad(store, sessionKey, sessionId, generation);
      else fold(entry, rows);
    }
    const now = this.clock.now();
    entry.usedAt = now;
    this.drop(sessionKey);
    this.entries.set(sessionKey, entry);
    this.chars += entry.chars;
    this.evict(now);
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
    this.drop(sessionKey);
  }

  private drop(sessionKey: string): void {
    const entry = this.entries.get(sessionKey);
    if (!entry) return;
    this.entries.delete(sessionKey);
    this.chars -= entry.chars;
  }

  /**
   * Oldest first (the map is in order of use): drops idle entries, then entries over the session or character
   * bound. The newest entry goes too when it alone is over the character bound; its next turn reads it cold.
   */
  private evict(now: number): void {
    for (const [key, entry] of this.entries) {
      const idle = now - entry.usedAt >= this.idleMs;
      if (!idle && this.entries.size <= this.maxSessions && this.chars <= this.maxChars) return;
      this.drop(key);
    }
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
  return { sessionId, generation, lastSeq, messages, seqs, chars, usedAt: 0 };
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
