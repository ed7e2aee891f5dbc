import type { SessionLockPort } from "../session/lock-port.js";
import type { StorageFault } from "../storage/storage-fault.js";
import type {
  AuditQuery,
  RunRecord,
  SessionListPoint,
  SessionRecord,
  Store,
  TranscriptReadOptions,
  TranscriptRow,
} from "../storage/types.js";

export type { AuditQuery, RunRecord, SessionListPoint, SessionRecord, TranscriptRow };

/**
 * What the gateway's handlers read and change of sessions, runs and the audit ledger: they come here, never to the
 * store. Every method answers with a promise, so the handlers already wait on whatever backend the store is (a
 * Postgres store answers asynchronously), and a change of backend changes this file, not the handlers.
 */
export class SessionService {
  constructor(
    private readonly store: Store,
    private readonly locks: SessionLockPort,
  ) {}

  async get(key: string): Promise<SessionRecord | undefined> {
    return this.store.getSession(key);
  }

  /** The key of the session with this id, if there is one. */
  async keyOfSessionId(sessionId: string): Promise<string | undefined> {
    return (await this.store.getSessionById(sessionId))?.key;
  }

  async count(): Promise<number> {
    return this.store.countSessions();
  }

  /** Why the store cannot take writes right now (e.g. the disk is full), if it knows such a state; from memory. */
  storageFault(): StorageFault | undefined {
    return this.store.storageFault?.();
  }

  /** Newest update first (ties by key); `after` continues a listing after that session. */
  async listSessions(opts: { limit?: number; agentId?: string; after?: SessionListPoint }): Promise<SessionRecord[]> {
    return this.store.listSessions(opts);
  }

  /** Transcript rows (image parts as references), e.g. a page of chat.history. */
  async readTranscript(key: string, opts: TranscriptReadOptions): Promise<TranscriptRow[]> {
    return this.store.readTranscript(key, opts);
  }

  /** Seqs and stored sizes of transcript rows, newest first, without reading them (history-page.ts). */
  async transcriptSizes(key: string, opts: TranscriptReadOptions): Promise<Array<{ seq: number; bytes: number }>> {
    return this.store.transcriptSizes(key, opts);
  }

  async run(runId: string): Promise<RunRecord | undefined> {
    return this.store.getRun(runId);
  }

  /** Audit rows matching the query, newest first. */
  async listAuditEvents(query: AuditQuery) {
    return this.store.listAuditEvents(query);
  }

  /**
   * Starts a new transcript generation (a reset marker row ends the old one) and returns it. A reset rewrites the
   * session's transcript, so it holds the session lock like a run does (SPEC 3).
   */
  async reset(key: string, now: number, reason: string): Promise<number> {
    return this.underLock(key, () => this.store.resetSession(key, now, reason));
  }

  /** Deletes the session, its transcript and its runs' events, under the session lock; false when it did not exist. */
  async delete(key: string): Promise<boolean> {
    return this.underLock(key, () => this.store.deleteSession(key));
  }

  private async underLock<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
    const lock = await this.locks.acquire(key);
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }
}
