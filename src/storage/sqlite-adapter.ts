import type { CronJobSpec } from "../protocol/params.js";
import type { AuditEvent, CronRunInfo } from "../protocol/payloads.js";
import type { SqliteStore } from "./sqlite-store.js";
import type { StorageFault } from "./storage-fault.js";
import type {
  AuditEventInput,
  AuditQuery,
  AuthHealthRow,
  CompactionEntry,
  CostQuery,
  CostRow,
  CostSumQuery,
  CostTotals,
  CronJobRecord,
  CronRunRecord,
  LedgerBatch,
  OperatorSetting,
  RunRecord,
  RunStatus,
  RunsEnd,
  SessionListPoint,
  SessionRecord,
  SessionUsageAdd,
  Store,
  StoredRunEvent,
  TranscriptReadOptions,
  TranscriptRow,
} from "./types.js";

/**
 * The Store port over the SQLite engine. better-sqlite3 is synchronous: each method does its work when called (the
 * write is committed before the method returns its promise) and hands back a settled promise, with no thread hop.
 * A thrown error becomes a rejection.
 */
export class SqliteStoreAdapter implements Store {
  readonly kind = "sqlite";

  constructor(readonly db: SqliteStore) {}

  storageFault(): StorageFault | undefined {
    return this.db.storageFault();
  }

  async getSession(key: string): Promise<SessionRecord | undefined> {
    return this.db.getSession(key);
  }

  async getSessionById(sessionId: string): Promise<SessionRecord | undefined> {
    return this.db.getSessionById(sessionId);
  }

  async ensureSession(key: string, agentId: string, now: number): Promise<SessionRecord> {
    return this.db.ensureSession(key, agentId, now);
  }

  async updateSession(
    key: string,
    patch: Partial<Omit<SessionRecord, "key" | "sessionId" | "createdAt">>,
  ): Promise<void> {
    return this.db.updateSession(key, patch);
  }

  async listSessions(opts?: { limit?: number; agentId?: string; after?: SessionListPoint }): Promise<SessionRecord[]> {
    return this.db.listSessions(opts);
  }

  async countSessions(): Promise<number> {
    return this.db.countSessions();
  }

  async deleteSession(key: string): Promise<boolean> {
    return this.db.deleteSession(key);
  }

  async resetSession(key: string, now: number, reason: string): Promise<number> {
    return this.db.resetSession(key, now, reason);
  }

  async appendTranscript(rows: Array<Omit<TranscriptRow, "seq" | "generation">>): Promise<TranscriptRow[]> {
    return this.db.appendTranscript(rows);
  }

  async readTranscript(key: string, opts?: TranscriptReadOptions): Promise<TranscriptRow[]> {
    return this.db.readTranscript(key, opts);
  }

  async transcriptSizes(key: string, opts?: TranscriptReadOptions): Promise<Array<{ seq: number; bytes: number }>> {
    return this.db.transcriptSizes(key, opts);
  }

  async appendCompaction(key: string, entry: CompactionEntry): Promise<TranscriptRow> {
    return this.db.appendCompaction(key, entry);
  }

  async readContextRows(key: string, opts?: { generation?: number }): Promise<TranscriptRow[]> {
    return this.db.readContextRows(key, opts);
  }

  async createRun(run: RunRecord): Promise<void> {
    return this.db.createRun(run);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return this.db.getRun(runId);
  }

  async readIntake(
    runId: string,
    session: { key: string } | { sessionId: string },
  ): Promise<{ run?: RunRecord; session?: SessionRecord }> {
    // two indexed reads of the local file, no round trip to save
    const run = this.db.getRun(runId);
    const found = "key" in session ? this.db.getSession(session.key) : this.db.getSessionById(session.sessionId);
    return { ...(run ? { run } : {}), ...(found ? { session: found } : {}) };
  }

  async updateRun(
    runId: string,
    patch: Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">>,
  ): Promise<void> {
    return this.db.updateRun(runId, patch);
  }

  async listRuns(opts: { statuses?: RunStatus[]; sessionKey?: string; limit?: number }): Promise<RunRecord[]> {
    return this.db.listRuns(opts);
  }

  async listRecentRuns(opts: { limit: number; sessionKey?: string }): Promise<RunRecord[]> {
    return this.db.listRecentRuns(opts);
  }

  async pruneRuns(opts: { now: number; maxAgeMs: number; maxCount: number }): Promise<number> {
    return this.db.pruneRuns(opts);
  }

  async appendAuditEvents(events: AuditEventInput[]): Promise<void> {
    return this.db.appendAuditEvents(events);
  }

  async listAuditEvents(query: AuditQuery): Promise<AuditEvent[]> {
    return this.db.listAuditEvents(query);
  }

  async pruneAuditEvents(opts: { now: number; maxAgeMs: number; maxRows: number }): Promise<number> {
    return this.db.pruneAuditEvents(opts);
  }

  async appendCostRows(rows: readonly CostRow[]): Promise<void> {
    return this.db.appendCostRows(rows);
  }

  async listCostRows(
    query: CostQuery & { afterSeq?: number; limit: number },
  ): Promise<Array<CostRow & { seq: number }>> {
    return this.db.listCostRows(query);
  }

  async sumCost(query: CostSumQuery): Promise<CostTotals> {
    return this.db.sumCost(query);
  }

  async pruneCostRows(opts: { now: number; maxAgeMs: number; maxRows: number }): Promise<number> {
    return this.db.pruneCostRows(opts);
  }

  async listCronJobs(): Promise<CronJobRecord[]> {
    return this.db.listCronJobs();
  }

  async addCronJob(job: CronJobRecord): Promise<boolean> {
    return this.db.addCronJob(job);
  }

  async updateCronJob(spec: CronJobSpec): Promise<boolean> {
    return this.db.updateCronJob(spec);
  }

  async removeCronJob(id: string): Promise<boolean> {
    return this.db.removeCronJob(id);
  }

  async addCronRun(run: CronRunInfo): Promise<number> {
    return this.db.addCronRun(run);
  }

  async updateCronRun(id: number, patch: Partial<Omit<CronRunInfo, "jobId" | "scheduledAt">>): Promise<void> {
    return this.db.updateCronRun(id, patch);
  }

  async recentCronRuns(jobIds: readonly string[], limit: number): Promise<Map<string, CronRunRecord[]>> {
    return this.db.recentCronRuns(jobIds, limit);
  }

  async runningCronRuns(): Promise<CronRunRecord[]> {
    return this.db.runningCronRuns();
  }

  async pruneCronRuns(keep: number, jobId?: string): Promise<number> {
    return this.db.pruneCronRuns(keep, jobId);
  }

  async appendRunEvents(events: readonly StoredRunEvent[]): Promise<{ ignored: number }> {
    return this.db.appendRunEvents(events);
  }

  async appendLedgerBatch(batch: LedgerBatch): Promise<{ ignored: number }> {
    return this.db.appendLedgerBatch(batch);
  }

  async readRunEvents(runId: string, opts?: { afterSeq?: number; limit?: number }): Promise<StoredRunEvent[]> {
    return this.db.readRunEvents(runId, opts);
  }

  async lastRunEventSeq(runId: string): Promise<number> {
    return this.db.lastRunEventSeq(runId);
  }

  async acceptInput(session: { key: string; agentId: string; now: number }, run: RunRecord): Promise<void> {
    return this.db.acceptInput(session, run);
  }

  async appendTranscriptAndEnd(
    rows: Array<Omit<TranscriptRow, "seq" | "generation">>,
    end: RunsEnd,
  ): Promise<TranscriptRow[]> {
    return this.db.appendTranscriptAndEnd(rows, end);
  }

  async updateRuns(
    patches: ReadonlyArray<{ runId: string; patch: Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">> }>,
    usage?: SessionUsageAdd,
  ): Promise<void> {
    return this.db.updateRuns(patches, usage);
  }

  async listOperatorSettings(prefix: string): Promise<OperatorSetting[]> {
    return this.db.listOperatorSettings(prefix);
  }

  async putOperatorSetting(setting: OperatorSetting): Promise<void> {
    this.db.putOperatorSetting(setting);
  }

  async listAuthHealth(): Promise<AuthHealthRow[]> {
    return this.db.listAuthHealth();
  }

  async putAuthHealth(row: Omit<AuthHealthRow, "lastUsed">): Promise<void> {
    return this.db.putAuthHealth(row);
  }

  async clearAuthHealth(profileId: string, model?: string): Promise<number> {
    return this.db.clearAuthHealth(profileId, model);
  }

  async touchAuthProfile(profileId: string, at: number): Promise<void> {
    return this.db.touchAuthProfile(profileId, at);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
