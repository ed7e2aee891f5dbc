import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { AgentService } from "../agent/service.js";
import type { CronConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { type PeriodicPrune, startPeriodicPrune } from "../infra/periodic-prune.js";
import type { CronJobSpec } from "../protocol/params.js";
import type { CronHealth, CronJobInfo, CronRunInfo, CronRunStatus } from "../protocol/payloads.js";
import { CRON_LANE } from "../queue/types.js";
import { normalizeSessionKey } from "../session/keys.js";
import type { CronRunRecord } from "../storage/types.js";
import { CronSchedule, scheduleProblem, timeZoneProblem } from "./schedule.js";

/** How long an aborted run may take to end before its job run is recorded as timed out anyway. */
export const CRON_CLEANUP_MS = 5_000;
/** How often every job's run records are pruned to `cron.runLog.keepLines` (besides the pruning as they are written). */
export const CRON_PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/** health.cron.last lists at most this many jobs (the most recent results). */
export const CRON_HEALTH_LAST_MAX = 20;

/** Why a job operation was refused: the gateway answers with the code, naming the param. */
export class CronJobError extends Error {
  constructor(
    readonly code: "not_found" | "conflict" | "invalid_params" | "unavailable",
    message: string,
  ) {
    super(message);
  }
}

interface Job {
  spec: CronJobSpec;
  source: "config" | "rpc";
  schedule: CronSchedule;
  nextAt?: number;
  /** the job's run in flight (one at a time per job: a due time while it runs is recorded as skipped) */
  active?: { recordId: number; runId: string };
}

export interface CronSchedulerDeps {
  service: AgentService;
  config: CronConfig;
  clock: Clock;
  logger: Logger;
  newId?: () => string;
  /** see CRON_CLEANUP_MS */
  cleanupMs?: number;
  /**
   * A stored job was added, removed or switched here. Several nodes on Postgres: the other nodes are told, and call
   * `reloadStored` (the cron leader schedules the change at once; the others list it).
   */
  onStoredChange?: () => void;
}

/**
 * The cron scheduler (SPEC 17). Jobs come from config and from `cron.add` (stored). One timer, on the injected
 * Clock, waits for the nearest due job; croner only computes fire times. A due job becomes an isolated agent turn:
 * accepted through `AgentService.accept` in lane `cron`, origin `cron:<jobId>`, session `cron:<jobId>` (a fresh
 * transcript generation per run) unless the job names a session (whose history it then shares).
 *
 * Timeout (SPEC 13, the seed's rule): the scheduler arms its own deadline when the run's lifecycle `start` arrives
 * (the job's `timeoutSeconds`, else `cron.defaultTimeoutSeconds`), aborts the run there, waits at most `cleanupMs`
 * for it to end, and records `timeout` either way. A run that is still going after that no longer counts against the
 * cron lane (its slot is handed to the next job), so a stale run never blocks the queue. The lane has
 * `cron.maxConcurrentRuns` slots and a job at most one run going, so one hanging job never holds back the others.
 *
 * Run records (`cron_runs`, one per fire, skipped ones too) are kept to `cron.runLog.keepLines` per job: a job's
 * are pruned each time it has written that many since, and every job's once an hour (CRON_PRUNE_INTERVAL_MS) and at
 * start, so a flood of fires cannot grow the table past about twice the limit per job.
 *
 * Missed runs while the gateway was down (`catchUp`): "once" runs each such job once at start, never a burst;
 * "skip" records one `skipped` run (errorKind "missed"). Fire times are never replayed one by one.
 */
export class CronScheduler {
  private readonly jobs = new Map<string, Job>();
  private timer: unknown;
  private timerAt?: number;
  private running = false;
  /** runs that outlived their deadline and cleanup: each has taken one extra cron-lane slot until it ends */
  private stale = 0;
  /** per job: run records written since its records were last pruned */
  private readonly unpruned = new Map<string, number>();
  private pruning?: PeriodicPrune;
  private readonly cleanupMs: number;
  private readonly newId: () => string;

  constructor(private deps: CronSchedulerDeps) {
    this.cleanupMs = deps.cleanupMs ?? CRON_CLEANUP_MS;
    this.newId = deps.newId ?? randomUUID;
    for (const spec of deps.config.jobs) this.jobs.set(spec.id, this.makeJob(spec, "config"));
  }

  /** Jobs added by RPC, from the store: loaded once, before the first listing or start. */
  private loaded?: Promise<void>;
  private load(): Promise<void> {
    this.loaded ??= this.loadStored();
    return this.loaded;
  }

  private async loadStored(): Promise<void> {
    const { deps } = this;
    for (const stored of await this.store.listCronJobs()) {
      if (this.jobs.has(stored.spec.id)) {
        deps.logger.warn("cron: a stored job has the id of a config job; the config job wins", { id: stored.spec.id });
        continue;
      }
      try {
        this.jobs.set(stored.spec.id, this.makeJob(stored.spec, "rpc"));
      } catch (err) {
        deps.logger.warn("cron: a stored job cannot be scheduled", {
          id: stored.spec.id,
          error: (err as Error).message,
        });
      }
    }
  }

  private get store() {
    return this.deps.service.rt.store;
  }

  get enabled(): boolean {
    return this.deps.config.enabled;
  }

  /**
   * Starts scheduling (call after recovery): runs left `running` by a previous process are recorded as errors,
   * missed runs are caught up per `catchUp`, and the timer is armed. Does nothing when cron is disabled.
   */
  async start(): Promise<void> {
    // a node that becomes the cron leader later re-reads what other nodes stored meanwhile
    if (this.loaded) await this.reloadStored();
    else await this.load();
    if (!this.enabled || this.running) return;
    this.running = true;
    this.setLaneSlots();
    const now = this.deps.clock.now();
    for (const r of await this.store.runningCronRuns()) {
      await this.store.updateCronRun(r.id, { status: "error", errorKind: "gateway_restart", endedAt: now });
    }
    this.pruning = startPeriodicPrune({
      what: "cron run records",
      prune: () => this.store.pruneCronRuns(this.keep),
      clock: this.deps.clock,
      logger: this.deps.logger,
      intervalMs: CRON_PRUNE_INTERVAL_MS,
    });
    const last = await this.store.recentCronRuns([...this.jobs.keys()], 1);
    for (const job of this.jobs.values()) {
      const previous = last.get(job.spec.id)?.[0]?.scheduledAt;
      const missed = previous !== undefined ? job.schedule.next(previous) : undefined;
      job.nextAt = job.schedule.next(now);
      if (!this.isEnabled(job) || missed === undefined || missed > now) continue;
      if (this.deps.config.catchUp === "once") await this.fire(job, missed);
      else await this.record(job, { scheduledAt: missed, status: "skipped", errorKind: "missed", endedAt: now });
    }
    this.arm();
  }

  /**
   * A reloaded config (SPEC 26): its jobs replace the config's jobs (one whose spec is unchanged keeps its next fire
   * time), and the lane, timeout and run-log settings apply from now. `enabled` and `catchUp` act at start only
   * (config/changes.ts names them as restart keys).
   */
  reconfigure(config: CronConfig): void {
    this.deps = { ...this.deps, config };
    const now = this.deps.clock.now();
    for (const [id, job] of this.jobs) {
      if (job.source === "config" && !config.jobs.some((spec) => spec.id === id)) this.jobs.delete(id);
    }
    for (const spec of config.jobs) {
      const existing = this.jobs.get(spec.id);
      if (existing?.source === "config" && isDeepStrictEqual(existing.spec, spec)) continue;
      const job = this.makeJob(spec, "config");
      job.active = existing?.active;
      if (this.running) job.nextAt = job.schedule.next(now);
      this.jobs.set(spec.id, job);
    }
    if (!this.running) return;
    this.setLaneSlots();
    this.arm();
  }

  /** Stops scheduling: no job starts after this (runs in flight are the service's to drain). Idempotent. */
  stop(): void {
    this.running = false;
    this.pruning?.stop();
    this.pruning = undefined;
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = undefined;
  }

  /**
   * Another node changed the stored jobs: jobs added there are scheduled here from now, removed ones are dropped,
   * switched ones take their new state (due from now, as a local cron.update). Config jobs are this node's own.
   */
  async reloadStored(): Promise<void> {
    await this.load();
    const stored = await this.store.listCronJobs();
    const ids = new Set(stored.map((s) => s.spec.id));
    for (const [id, job] of this.jobs) {
      if (job.source !== "rpc" || ids.has(id)) continue;
      this.jobs.delete(id);
      this.unpruned.delete(id);
    }
    const now = this.deps.clock.now();
    for (const { spec } of stored) {
      const job = this.jobs.get(spec.id);
      if (job?.source === "config" || (job && job.spec.enabled === spec.enabled)) continue;
      try {
        const next = job ?? this.makeJob(spec, "rpc");
        next.spec = spec;
        next.nextAt = next.schedule.next(now);
        this.jobs.set(spec.id, next);
      } catch (err) {
        this.deps.logger.warn("cron: a stored job cannot be scheduled", { id: spec.id, error: (err as Error).message });
      }
    }
    this.arm();
  }

  async list(runsPerJob = 10): Promise<CronJobInfo[]> {
    await this.load();
    const runs = await this.store.recentCronRuns([...this.jobs.keys()], runsPerJob);
    return [...this.jobs.values()].map((job) => this.info(job, runs.get(job.spec.id) ?? []));
  }

  /** cron.add: validated like a config job; a config job's id or a stored one is refused. */
  async add(spec: CronJobSpec): Promise<CronJobInfo> {
    await this.load();
    const problem = scheduleProblem(spec.schedule);
    if (problem) throw new CronJobError("invalid_params", `params.schedule: ${problem}`);
    const tzProblem = spec.tz !== undefined ? timeZoneProblem(spec.tz) : undefined;
    if (tzProblem) throw new CronJobError("invalid_params", `params.tz: ${tzProblem}`);
    this.sessionKeyFor(spec);
    const existing = this.jobs.get(spec.id);
    if (existing) {
      throw new CronJobError(
        "conflict",
        existing.source === "config"
          ? `params.id: "${spec.id}" is a job from the config (cron.jobs); pick another id`
          : `params.id: a job "${spec.id}" already exists; remove it first`,
      );
    }
    const job = this.makeJob(spec, "rpc");
    if (!(await this.store.addCronJob({ spec, createdAt: this.deps.clock.now() }))) {
      throw new CronJobError("conflict", `params.id: a job "${spec.id}" already exists; remove it first`);
    }
    job.nextAt = job.schedule.next(this.deps.clock.now());
    this.jobs.set(spec.id, job);
    this.arm();
    this.deps.onStoredChange?.();
    return this.info(job, []);
  }

  /** cron.remove: RPC jobs only; a config job is refused with the reason. */
  async remove(id: string): Promise<boolean> {
    await this.load();
    const job = this.jobs.get(id);
    if (job?.source === "config") {
      throw new CronJobError(
        "conflict",
        `params.id: "${id}" is a job from the config (cron.jobs); remove it there (the gateway reloads its config file)`,
      );
    }
    const removed = await this.store.removeCronJob(id);
    if (!job && !removed) throw new CronJobError("not_found", `params.id: no cron job "${id}"`);
    this.jobs.delete(id);
    this.unpruned.delete(id);
    this.arm();
    this.deps.onStoredChange?.();
    return true;
  }

  /**
   * cron.update: switches an RPC job on or off (stored, so it holds across restarts). A config job is refused with
   * where to change it: the config file is the user's (a change to it is reloaded).
   */
  async setEnabled(id: string, enabled: boolean): Promise<CronJobInfo> {
    await this.load();
    const job = this.jobs.get(id);
    if (!job) throw new CronJobError("not_found", `params.id: no cron job "${id}"`);
    if (job.source === "config") {
      throw new CronJobError(
        "conflict",
        `params.id: "${id}" is a job from the config (cron.jobs); set its enabled there (the gateway reloads its config file)`,
      );
    }
    const spec = { ...job.spec, enabled };
    if (!(await this.store.updateCronJob(spec))) throw new CronJobError("not_found", `params.id: no cron job "${id}"`);
    job.spec = spec;
    // re-enabled: due from now on, never for the fire times it slept through
    job.nextAt = job.schedule.next(this.deps.clock.now());
    this.arm();
    this.deps.onStoredChange?.();
    const runs = await this.store.recentCronRuns([id], 10);
    return this.info(job, runs.get(id) ?? []);
  }

  /** cron.runs: one job's run records, newest first. */
  async runs(id: string, limit: number): Promise<CronRunInfo[]> {
    await this.load();
    if (!this.jobs.has(id)) throw new CronJobError("not_found", `params.id: no cron job "${id}"`);
    const runs = (await this.store.recentCronRuns([id], limit)).get(id) ?? [];
    return runs.map(({ id: _id, ...r }) => r);
  }

  /** The session a job runs in (for access checks), or undefined for an unknown job. */
  sessionKeyOf(id: string): string | undefined {
    const job = this.jobs.get(id);
    return job ? this.sessionKeyFor(job.spec) : undefined;
  }

  /** The full session key of a job's runs: `cron:<id>`, or its sessionKey as the agent's (`agent:<agent>:<key>`). */
  sessionKeyFor(spec: CronJobSpec): string {
    const agentId = spec.agentId ?? this.deps.service.rt.defaultAgentId;
    try {
      return normalizeSessionKey(spec.sessionKey ?? `cron:${spec.id}`, agentId).key;
    } catch (err) {
      throw new CronJobError("invalid_params", `params.sessionKey: ${(err as Error).message}`);
    }
  }

  /** cron.run: the job runs now (also a disabled one), outside its schedule. */
  async runNow(id: string): Promise<{ runId: string }> {
    await this.load();
    const job = this.jobs.get(id);
    if (!job) throw new CronJobError("not_found", `params.id: no cron job "${id}"`);
    if (!this.running) {
      throw new CronJobError("unavailable", "cron is not running (cron.enabled is false, or the gateway is stopping)");
    }
    if (job.active) {
      throw new CronJobError("conflict", `job "${id}" is running (run ${job.active.runId}); try when it ends`);
    }
    const runId = await this.fire(job, this.deps.clock.now());
    if (!runId) throw new CronJobError("unavailable", `job "${id}" could not start: see the gateway log`);
    return { runId };
  }

  /** health.cron: the job count and each job's last result, most recent first, bounded. */
  async health(): Promise<CronHealth> {
    const runs = await this.store.recentCronRuns([...this.jobs.keys()], 1);
    const last = [...runs.values()]
      .map((r) => r[0])
      .sort((a, b) => lastAt(b) - lastAt(a))
      .slice(0, CRON_HEALTH_LAST_MAX)
      .map((r) => ({ jobId: r.jobId, status: r.status, at: lastAt(r), ...(r.runId ? { runId: r.runId } : {}) }));
    return { jobs: this.jobs.size, last };
  }

  private makeJob(spec: CronJobSpec, source: Job["source"]): Job {
    return { spec, source, schedule: new CronSchedule(spec.schedule, spec.tz) };
  }

  private isEnabled(job: Job): boolean {
    return job.spec.enabled !== false;
  }

  private info(job: Job, runs: CronRunRecord[]): CronJobInfo {
    const { spec } = job;
    return {
      id: spec.id,
      schedule: spec.schedule,
      ...(spec.tz !== undefined ? { tz: spec.tz } : {}),
      message: spec.message,
      ...(spec.agentId !== undefined ? { agentId: spec.agentId } : {}),
      sessionKey: this.sessionKeyFor(spec),
      ...(spec.timeoutSeconds !== undefined ? { timeoutSeconds: spec.timeoutSeconds } : {}),
      ...(spec.model !== undefined ? { model: spec.model } : {}),
      enabled: this.isEnabled(job),
      source: job.source,
      ...(this.running && this.isEnabled(job) && job.nextAt !== undefined ? { nextRunAt: job.nextAt } : {}),
      runs: runs.map(({ id: _id, ...r }) => r),
    };
  }

  /** One timer for the nearest due job; re-armed only when that changes. */
  private arm(): void {
    if (!this.running) return;
    let nearest: number | undefined;
    for (const job of this.jobs.values()) {
      if (!this.isEnabled(job) || job.nextAt === undefined) continue;
      if (nearest === undefined || job.nextAt < nearest) nearest = job.nextAt;
    }
    if (nearest === this.timerAt && this.timer !== undefined) return;
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = nearest;
    if (nearest === undefined) return;
    this.timer = this.deps.clock.setTimeout(() => this.tick(), Math.max(0, nearest - this.deps.clock.now()));
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = undefined;
    if (!this.running) return;
    const now = this.deps.clock.now();
    for (const job of this.jobs.values()) {
      if (!this.isEnabled(job) || job.nextAt === undefined || job.nextAt > now) continue;
      const due = job.nextAt;
      // the next fire time after now, not after `due`: a late timer never turns into a burst
      job.nextAt = job.schedule.next(now);
      void this.fire(job, due);
    }
    this.arm();
  }

  /** Starts one run of the job; returns its run id, or undefined when it was skipped or refused. */
  private async fire(job: Job, scheduledAt: number): Promise<string | undefined> {
    if (!this.running) return undefined;
    const { spec } = job;
    const now = this.deps.clock.now();
    if (job.active) {
      await this.record(job, { scheduledAt, status: "skipped", errorKind: "overlap", endedAt: now }).catch((err) =>
        this.deps.logger.warn("cron: a skipped run could not be recorded", { error: (err as Error).message }),
      );
      return undefined;
    }
    const runId = this.newId();
    // taken before the first await: a second fire of the job meanwhile is an overlap
    const active = { recordId: -1, runId };
    job.active = active;
    let recordId: number | undefined;
    let follow: (() => void) | undefined;
    try {
      const sessionKey = this.sessionKeyFor(spec);
      if (spec.sessionKey === undefined) await this.freshGeneration(sessionKey);
      recordId = await this.record(job, { scheduledAt, status: "running", runId });
      active.recordId = recordId;
      // listening before the accept: the run may start before the accept's answer is back here
      follow = this.watch(job, active, sessionKey);
      await this.deps.service.accept(
        {
          message: spec.message,
          idempotencyKey: runId,
          sessionKey,
          lane: CRON_LANE,
          ...(spec.agentId !== undefined ? { agentId: spec.agentId } : {}),
          ...(spec.timeoutSeconds !== undefined ? { timeout: spec.timeoutSeconds } : {}),
          ...(spec.model !== undefined ? { model: spec.model } : {}),
        },
        { actor: `cron:${spec.id}` },
      );
      follow();
      return runId;
    } catch (err) {
      follow = undefined;
      this.unwatch.get(runId)?.();
      if (job.active === active) job.active = undefined;
      const message = (err as Error)?.message ?? String(err);
      this.deps.logger.warn("cron: job could not start", { jobId: spec.id, error: message });
      const ended = { status: "error" as const, errorKind: "not_started", endedAt: now };
      try {
        if (recordId !== undefined) await this.store.updateCronRun(recordId, ended);
        else await this.record(job, { scheduledAt, ...ended });
      } catch (writeErr) {
        this.deps.logger.warn("cron: a failed start could not be recorded", { error: (writeErr as Error).message });
      }
      return undefined;
    }
  }

  /** the bus listeners of runs being started, so a start that fails can drop its listener */
  private readonly unwatch = new Map<string, () => void>();

  /**
   * Isolation: each run of a job in its own `cron:<jobId>` session starts a new transcript generation, so the
   * model sees none of the previous runs (the old rows are kept, as /new keeps them). It is a /new in all but name
   * (session/lifecycle.ts): the session write lock (a session busy past the lock's timeout fails the start, as it
   * would fail a run), session_end and session_start, the sessions.changed notice.
   */
  private async freshGeneration(sessionKey: string): Promise<void> {
    const session = await this.store.getSession(sessionKey);
    if (!session) return;
    if ((await this.store.readTranscript(sessionKey, { limit: 1, kinds: ["message"] })).length === 0) return;
    await this.deps.service.sessions.reset(sessionKey, { reason: "new", marker: "cron: isolated run" });
  }

  /**
   * Follows the run: arms the job's deadline at lifecycle start, records how it ended. Listens at once; the returned
   * function, called once the run is accepted, waits for its end.
   */
  private watch(job: Job, active: { recordId: number; runId: string }, sessionKey: string): () => void {
    const { service, clock } = this.deps;
    // no timeoutSeconds: cron's own default, so a hung model call cannot hold the job (and a lane slot) for 48 h
    const timeoutMs = (job.spec.timeoutSeconds ?? this.deps.config.defaultTimeoutSeconds) * 1000;
    let deadline: unknown;
    let cleanup: unknown;
    let settled = false;
    let timedOut = false;
    const settle = (patch: Partial<CronRunInfo>) => {
      if (settled) return;
      settled = true;
      if (deadline !== undefined) clock.clearTimeout(deadline);
      if (cleanup !== undefined) clock.clearTimeout(cleanup);
      unsubscribe();
      if (job.active === active) job.active = undefined;
      this.store.updateCronRun(active.recordId, { ...patch, endedAt: clock.now() }).catch((err: unknown) => {
        // a store that cannot write (disk full, closed at shutdown): the next start's recovery ends the record
        this.deps.logger.warn("cron: a run's end could not be recorded", { error: (err as Error).message });
      });
    };
    const listening = service.rt.bus.subscribeRun(active.runId, (ev) => {
      if (ev.stream !== "lifecycle" || (ev.data as { phase?: string }).phase !== "start") return;
      this.store.updateCronRun(active.recordId, { startedAt: ev.ts }).catch((err: unknown) => {
        this.deps.logger.warn("cron: a run's start could not be recorded", { error: (err as Error).message });
      });
      if (timeoutMs > 0) deadline = clock.setTimeout(onDeadline, timeoutMs);
    });
    const onDeadline = () => {
      deadline = undefined;
      timedOut = true;
      this.deps.logger.warn("cron: run passed its deadline; aborting", { jobId: job.spec.id, runId: active.runId });
      service.abort(sessionKey, active.runId);
      cleanup = clock.setTimeout(() => {
        cleanup = undefined;
        // still going after abort and cleanup: recorded now, and its cron-lane slot goes to the next job
        this.deps.logger.warn("cron: run did not end after abort; recorded as timeout", { runId: active.runId });
        settle({ status: "timeout", errorKind: "timeout" });
        this.releaseLaneSlot(active.runId);
      }, this.cleanupMs);
    };
    const unsubscribe = () => {
      listening();
      this.unwatch.delete(active.runId);
    };
    this.unwatch.set(active.runId, unsubscribe);
    return () =>
      void service.final(active.runId).then(
        (final) => {
          if (timedOut) return settle({ status: "timeout", errorKind: "timeout" });
          const status: CronRunStatus = final.status === "ok" ? "ok" : final.status === "timeout" ? "timeout" : "error";
          // the error kind is the run's stop reason (timeout, aborted, error, ...); no raw error text is stored
          const kind = status === "ok" ? undefined : (final.stopReason ?? final.status);
          settle({ status, ...(kind ? { errorKind: kind } : {}) });
        },
        (err) => settle({ status: "error", errorKind: (err as Error)?.name ?? "error" }),
      );
  }

  /** A stale run keeps its lane slot until it really ends: the lane gets one more slot for that long. */
  private releaseLaneSlot(runId: string): void {
    this.stale++;
    this.setLaneSlots();
    void this.deps.service.final(runId).finally(() => {
      this.stale--;
      this.setLaneSlots();
    });
  }

  /** The cron lane: `cron.maxConcurrentRuns` slots, plus one per stale run. */
  private setLaneSlots(): void {
    this.deps.service.rt.lanes.setConcurrency(CRON_LANE, this.deps.config.maxConcurrentRuns + this.stale);
  }

  private get keep(): number {
    return this.deps.config.runLog.keepLines;
  }

  private async record(job: Job, run: Omit<CronRunInfo, "jobId">): Promise<number> {
    const id = await this.store.addCronRun({ jobId: job.spec.id, ...run });
    this.pruneAfterWrites(job.spec.id);
    return id;
  }

  /**
   * A job's records are pruned once it has written `keepLines` since the last time: a flood of fires (a job every
   * second, overlaps recorded as skipped) stays within twice the limit, at one indexed delete per `keepLines` rows.
   */
  private pruneAfterWrites(jobId: string): void {
    const written = (this.unpruned.get(jobId) ?? 0) + 1;
    if (written < this.keep) {
      this.unpruned.set(jobId, written);
      return;
    }
    this.unpruned.delete(jobId);
    this.store.pruneCronRuns(this.keep, jobId).catch((err: unknown) => {
      this.deps.logger.warn(`cron: pruning the run records of "${jobId}" failed: ${(err as Error)?.message ?? err}`);
    });
  }
}

function lastAt(r: CronRunInfo): number {
  return r.endedAt ?? r.startedAt ?? r.scheduledAt;
}
