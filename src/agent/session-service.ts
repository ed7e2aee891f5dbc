import type { DeleteRequest, ResetOutcome, ResetRequest, SessionLifecycle } from "../session/lifecycle.js";
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
    private readonly lifecycle: SessionLifecycle,
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
   * Starts a new transcript generation (a reset marker row ends the old one), as /reset does: under the session
   * lock, with the same hooks and notices (session/lifecycle.ts).
   */
  async reset(key: string, req: ResetRequest): Promise<ResetOutcome> {
    return this.lifecycle.reset(key, req);
  }

  /** Deletes the session, its transcript and its runs' events, as the lifecycle does; false when it did not exist. */
  async delete(key: string, req?: DeleteRequest): Promise<boolean> {
    return this.lifecycle.delete(key, req);
  }
}
