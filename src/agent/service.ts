import { randomUUID } from "node:crypto";
import { currentProcessIdentity, isSameLiveProcess } from "../infra/process-liveness.js";
import type { AgentFinal, AgentRequest, Receipt, WaitResult, WireStatus } from "../protocol/run.js";
import type { Usage, UserMessage } from "../providers/types.js";
import { DEFAULT_AGENT_ID, normalizeSessionKey } from "../session/keys.js";
import type { RunRecord } from "../storage/types.js";
import { agentCommand, parseSlashCommand } from "./agent-command.js";
import type { SteeringPort } from "./loop.js";
import {
  collectPrompt,
  isQueueMode,
  overflowPrompt,
  type QueueMode,
  resolveQueueMode,
  summarizeDropped,
} from "./queue-policy.js";
import type { EmbeddedRunResult } from "./run-embedded.js";
import type { AgentRuntime } from "./runtime.js";

export type { AgentFinal, AgentRequest, Receipt, WaitResult, WireStatus };

export interface AcceptedRun {
  runId: string;
  sessionKey: string;
  status: "accepted";
  acceptedAt: number;
  /** true when the idempotency key named a run that already existed: nothing new was started */
  existing: boolean;
  receipt: Receipt;
}

export class RunNotFoundError extends Error {
  readonly code = "not_found";
  constructor(runId: string) {
    super(`no run with runId "${runId}"`);
    this.name = "RunNotFoundError";
  }
}

export class ServiceDrainingError extends Error {
  readonly code = "unavailable";
  readonly retryable = true;
  constructor() {
    super("the gateway is shutting down and accepts no new runs; retry against the restarted gateway");
    this.name = "ServiceDrainingError";
  }
}

/** The queue is full and the drop policy is `new`: the newcomer is refused (and nothing is stored). */
export class QueueFullError extends Error {
  readonly code = "queue_full";
  readonly retryable = true;
  constructor(sessionKey: string, cap: number) {
    super(`session ${sessionKey} already has ${cap} queued messages (messages.queue.cap); message refused`);
    this.name = "QueueFullError";
  }
}

export class RunParamError extends Error {
  readonly code = "invalid_params";
  readonly param: string;
  constructor(param: string, message: string) {
    super(message);
    this.name = "RunParamError";
    this.param = param;
  }
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (v: T) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** One accepted message that has not ended yet. */
interface LiveRun {
  runId: string;
  sessionKey: string;
  req: AgentRequest & { agentId: string };
  mode: QueueMode;
  /** pending: waiting in the session queue; queued: in lanes; running: holds its lanes; merged: inside another run */
  phase: "pending" | "queued" | "running" | "merged";
  controller?: AbortController;
  done: Deferred<AgentFinal>;
  acceptedAt: number;
}

interface ActiveTurn {
  host: LiveRun;
  /** messages steered into this turn, waiting for the loop to take them */
  steer: LiveRun[];
  /** collected/steered runs whose outcome is the host's */
  merged: LiveRun[];
  steerable: boolean;
}

interface SessionState {
  key: string;
  active?: ActiveTurn;
  pending: LiveRun[];
  overflow: { count: number; summaries: string[] };
  lastEnqueueAt: number;
  timer?: unknown;
  /** interrupt mode: the next turn starts without the quiet window */
  immediate: boolean;
}

function zeroUsage(): Usage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
}

function toFinal(r: EmbeddedRunResult): AgentFinal {
  const aborted = r.status === "aborted";
  return {
    runId: r.runId,
    status: r.status === "ok" ? "ok" : r.status === "timeout" ? "timeout" : "error",
    summary: r.status === "ok" ? "completed" : aborted ? "aborted" : "failed",
    stopReason: r.stopReason,
    result: {
      payloads: r.payloads,
      meta: { durationMs: r.durationMs, usage: r.usage, model: r.model, laneWaitMs: r.laneWaitMs, steps: r.steps },
    },
    ...(r.error ? { error: r.error.message } : {}),
  };
}

function endedFinal(runId: string, summary: AgentFinal["summary"], stopReason: string, error: string): AgentFinal {
  return {
    runId,
    status: "error",
    summary,
    stopReason,
    result: { payloads: [], meta: { durationMs: 0, usage: zeroUsage() } },
    error,
  };
}

function finalFromRecord(run: RunRecord): AgentFinal | undefined {
  if (run.status === "queued" || run.status === "running") return undefined;
  if (run.result) return run.result as unknown as AgentFinal;
  return {
    runId: run.runId,
    status: run.status === "ok" ? "ok" : run.status === "timeout" ? "timeout" : "error",
    summary: run.status === "ok" ? "completed" : run.status === "aborted" ? "aborted" : "failed",
    stopReason: run.stopReason,
    result: {
      payloads: [],
      meta: { durationMs: (run.endedAt ?? 0) - (run.startedAt ?? run.acceptedAt), usage: zeroUsage() },
    },
    ...(run.error ? { error: run.error } : {}),
  };
}

function waitResultOf(run: RunRecord): WaitResult {
  if (run.status === "queued") return { runId: run.runId, status: "pending" };
  if (run.status === "running") return { runId: run.runId, status: "timeout", startedAt: run.startedAt };
  const status: WireStatus = run.status === "ok" ? "ok" : run.status === "timeout" ? "timeout" : "error";
  return {
    runId: run.runId,
    status,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    ...(run.error ? { error: run.error } : {}),
    ...(run.stopReason ? { stopReason: run.stopReason } : {}),
  };
}

/**
 * The facade the gateway and the CLI drive: durable accept, queue modes, execution, waiting, aborting, recovery.
 *
 * Durability: an accepted message is a run record (status "queued") in the store before `accept` returns, and
 * every record reaches a terminal status with a reason — ran, steered into a run, collected, dropped (with why),
 * aborted, or failed by a gateway restart. Nothing accepted disappears without a receipt or an error.
 *
 * Per session at most one turn is active here; the session lane below still serializes anything else that runs
 * in the session (and the write lock catches other processes).
 */
export class AgentService {
  readonly rt: AgentRuntime;
  private readonly live = new Map<string, LiveRun>();
  private readonly sessions = new Map<string, SessionState>();
  private draining = false;

  constructor(rt: AgentRuntime) {
    this.rt = rt;
  }

  get activeRunCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.active) n++;
    return n;
  }

  /** Run ids of the session's active turn (host and messages merged into it) and of its queued messages. */
  activeRuns(sessionKey: string): string[] {
    const s = this.sessions.get(sessionKey);
    if (!s) return [];
    const ids: string[] = [];
    if (s.active) ids.push(s.active.host.runId, ...s.active.merged.map((r) => r.runId));
    for (const r of s.pending) ids.push(r.runId);
    return ids;
  }

  /** Number of sessions with queued or active work held in memory (idle sessions are dropped). */
  get busySessionCount(): number {
    return this.sessions.size;
  }

  private queueConfig() {
    return this.rt.config.messages.queue;
  }

  /** Validates, resolves the session, persists session + run record, then routes by queue mode; returns at once. */
  accept(req: AgentRequest): AcceptedRun {
    const existing = this.rt.store.getRun(req.idempotencyKey);
    if (existing) {
      return {
        runId: existing.runId,
        sessionKey: existing.sessionKey,
        status: "accepted",
        acceptedAt: existing.acceptedAt,
        existing: true,
        receipt: (existing.receipt as Receipt | undefined) ?? { kind: "started" },
      };
    }
    if (this.draining) throw new ServiceDrainingError();
    if (req.queueMode !== undefined && !isQueueMode(req.queueMode)) {
      throw new RunParamError("queueMode", `queueMode: expected steer, followup, collect or interrupt`);
    }
    const agentId = req.agentId ?? DEFAULT_AGENT_ID;
    let sessionKey: string;
    if (req.sessionId && !req.sessionKey) {
      const s = this.rt.store.getSessionById(req.sessionId);
      if (!s) throw new RunParamError("sessionId", `sessionId: unknown session id "${req.sessionId}"`);
      sessionKey = s.key;
    } else {
      sessionKey = normalizeSessionKey(req.sessionKey, agentId).key;
    }
    const parsed = normalizeSessionKey(sessionKey, agentId);
    const model = req.provider && req.model && !req.model.includes("/") ? `${req.provider}/${req.model}` : req.model;
    const full = { ...req, agentId: parsed.agentId, model } as AgentRequest & { agentId: string };
    const acceptedAt = this.rt.clock.now();
    const cfg = this.queueConfig();
    const state = this.sessions.get(sessionKey);
    const storedSession = this.rt.store.getSession(sessionKey);
    // `/stop` aborts the active run and clears the queue: it is an interrupt whatever the queue mode says.
    // Slash commands are never steered into a running turn as text: /new and /reset wait their turn (followup);
    // /stop is an interrupt whatever the queue mode says.
    const slash = parseSlashCommand(req.message);
    const mode = resolveQueueMode({
      message: slash ? (slash.command === "stop" ? "interrupt" : "followup") : req.queueMode,
      session: storedSession?.queueMode,
      channel: req.channel,
      byChannel: cfg.byChannel,
      global: cfg.mode,
    });
    const busy = state !== undefined && (state.active !== undefined || state.pending.length > 0);
    const steering = busy && mode === "steer" && state.active?.steerable === true;
    const queueing = busy && !steering && mode !== "interrupt";
    if (queueing && state.pending.length >= cfg.cap && cfg.drop === "new") {
      const reason = new QueueFullError(sessionKey, cfg.cap);
      this.rt.bus.emit(req.idempotencyKey, sessionKey, "queue", {
        receipt: { kind: "rejected", reason: reason.message },
      });
      throw reason;
    }

    // The receipt is known before anything runs, so it is stored with the run record in the same commit.
    const receipt: Receipt = !busy
      ? { kind: "started" }
      : steering && state.active
        ? { kind: "steered", into: state.active.host.runId }
        : mode === "interrupt"
          ? { kind: "queued", position: 1, mode: "followup" }
          : {
              kind: "queued",
              // at the cap one message is dropped first, so the newcomer lands at the cap's position
              position: Math.min(state.pending.length + 1, cfg.cap),
              mode: mode === "collect" ? "collect" : "followup",
            };
    this.rt.store.transaction(() => {
      this.rt.store.ensureSession(sessionKey, parsed.agentId, acceptedAt);
      this.rt.store.createRun({
        runId: req.idempotencyKey,
        sessionKey,
        status: "queued",
        acceptedAt,
        receipt: receipt as unknown as Record<string, unknown>,
        // The accepting process is recorded so recover() in another process never takes over a live owner's runs.
        params: { ...full, owner: PROCESS_OWNER } as unknown as Record<string, unknown>,
      });
    });

    const run: LiveRun = {
      runId: req.idempotencyKey,
      sessionKey,
      req: full,
      mode,
      phase: "pending",
      done: deferred(),
      acceptedAt,
    };
    this.live.set(run.runId, run);
    const s = state ?? this.newState(sessionKey);
    s.lastEnqueueAt = acceptedAt;

    // the receipt event goes out first, so a client sees it before the run's own events
    this.rt.bus.emit(run.runId, run.sessionKey, "queue", { receipt });
    if (!busy) {
      this.launch(s, run, [], run.req.message);
    } else if (steering && s.active) {
      run.phase = "merged";
      s.active.steer.push(run);
    } else if (mode === "interrupt") {
      for (const p of s.pending.splice(0)) this.drop(p, "cleared by an interrupting message");
      // Also queued input: messages steered into the run being aborted that it has not taken yet (they would
      // otherwise become followups ahead of this message), and a pending [Queue overflow] notice.
      for (const p of s.active?.steer.splice(0) ?? []) this.drop(p, "cleared by an interrupting message");
      s.overflow = { count: 0, summaries: [] };
      s.pending.push(run);
      s.immediate = true;
      s.active?.host.controller?.abort(new Error("interrupted by a newer message"));
      this.schedule(s);
    } else {
      if (s.pending.length >= cfg.cap) this.applyCap(s, cfg.drop);
      s.pending.push(run);
      this.schedule(s);
    }
    return { runId: run.runId, sessionKey, status: "accepted", acceptedAt, existing: false, receipt };
  }

  private newState(key: string): SessionState {
    const s: SessionState = {
      key,
      pending: [],
      overflow: { count: 0, summaries: [] },
      lastEnqueueAt: 0,
      immediate: false,
    };
    this.sessions.set(key, s);
    return s;
  }

  private setReceipt(run: LiveRun, receipt: Receipt): void {
    this.rt.store.updateRun(run.runId, { receipt: receipt as unknown as Record<string, unknown> });
    this.rt.bus.emit(run.runId, run.sessionKey, "queue", { receipt });
  }

  private applyCap(s: SessionState, policy: "summarize" | "old" | "new"): void {
    const oldest = s.pending.shift();
    if (!oldest) return;
    if (policy === "summarize") {
      s.overflow.count++;
      s.overflow.summaries.push(summarizeDropped(oldest.req.message));
      this.drop(oldest, "queue cap reached; summarized into a [Queue overflow] followup");
    } else {
      this.drop(oldest, "queue cap reached; oldest message dropped");
    }
  }

  /** Ends a message that will never run, with its reason, in the store, as an event and for waiters. */
  private drop(run: LiveRun, reason: string, summary: AgentFinal["summary"] = "failed"): void {
    const now = this.rt.clock.now();
    const final = endedFinal(run.runId, summary, summary === "aborted" ? "aborted" : "dropped", reason);
    const receipt: Receipt = { kind: "dropped", reason };
    this.rt.store.updateRun(run.runId, {
      status: summary === "aborted" ? "aborted" : "error",
      endedAt: now,
      stopReason: final.stopReason,
      error: reason,
      result: final as unknown as Record<string, unknown>,
      receipt: receipt as unknown as Record<string, unknown>,
    });
    this.rt.bus.emit(run.runId, run.sessionKey, "queue", { receipt });
    this.rt.bus.emit(run.runId, run.sessionKey, "lifecycle", {
      phase: "error",
      endedAt: now,
      status: summary === "aborted" ? "aborted" : "error",
      stopReason: final.stopReason,
      error: reason,
      kind: summary === "aborted" ? "aborted" : "dropped",
    });
    this.finish(run, final);
  }

  private finish(run: LiveRun, final: AgentFinal): void {
    this.live.delete(run.runId);
    this.rt.bus.endRun(run.runId);
    run.done.resolve(final);
  }

  /** Sets the drain timer: the next turn starts after the quiet window since the last enqueue. */
  private schedule(s: SessionState): void {
    if (s.active) return;
    if (s.pending.length === 0 && s.overflow.count === 0) {
      if (s.timer !== undefined) this.rt.clock.clearTimeout(s.timer);
      this.sessions.delete(s.key);
      return;
    }
    if (s.timer !== undefined) this.rt.clock.clearTimeout(s.timer);
    const wait = s.immediate ? 0 : Math.max(0, s.lastEnqueueAt + this.queueConfig().debounceMs - this.rt.clock.now());
    s.timer = this.rt.clock.setTimeout(() => {
      s.timer = undefined;
      this.drainNext(s);
    }, wait);
  }

  private drainNext(s: SessionState): void {
    // While draining, queued inputs stay "queued" in the store for the next start to run.
    if (s.active || this.draining) return;
    s.immediate = false;
    if (s.overflow.count > 0) {
      const text = overflowPrompt(s.overflow.summaries, s.overflow.count);
      s.overflow = { count: 0, summaries: [] };
      const template = s.pending[0]?.req;
      const runId = `overflow-${randomUUID()}`;
      const now = this.rt.clock.now();
      const req = {
        ...(template ?? { agentId: DEFAULT_AGENT_ID }),
        message: text,
        idempotencyKey: runId,
        sessionKey: s.key,
      } as AgentRequest & { agentId: string };
      this.rt.store.createRun({ runId, sessionKey: s.key, status: "queued", acceptedAt: now, params: req as never });
      const run: LiveRun = {
        runId,
        sessionKey: s.key,
        req,
        mode: "followup",
        phase: "pending",
        done: deferred(),
        acceptedAt: now,
      };
      this.live.set(runId, run);
      this.launch(s, run, [], text);
      return;
    }
    const first = s.pending.shift();
    if (!first) {
      this.schedule(s);
      return;
    }
    if (first.mode === "collect") {
      const batch = [first];
      for (let i = 0; i < s.pending.length; ) {
        if (s.pending[i].mode === "collect") batch.push(...s.pending.splice(i, 1));
        else i++;
      }
      if (batch.length > 1) {
        const rest = batch.slice(1);
        for (const r of rest) {
          r.phase = "merged";
          this.setReceipt(r, { kind: "collected", into: first.runId, count: batch.length });
        }
        this.setReceipt(first, { kind: "collected", into: first.runId, count: batch.length });
        this.launch(s, first, rest, collectPrompt(batch.map((r) => r.req.message)));
        return;
      }
    }
    this.launch(s, first, [], first.req.message);
  }

  /** Starts the host run of a turn; merged runs share its outcome. */
  private launch(s: SessionState, host: LiveRun, merged: LiveRun[], message: string): void {
    const controller = new AbortController();
    host.controller = controller;
    host.phase = "queued";
    const turn: ActiveTurn = { host, steer: [], merged: [...merged], steerable: true };
    s.active = turn;
    const steering: SteeringPort = {
      pending: () => turn.steerable && turn.steer.length > 0,
      take: () => {
        const taken = turn.steer.splice(0);
        const now = this.rt.clock.now();
        for (const r of taken) {
          turn.merged.push(r);
          this.rt.store.updateRun(r.runId, { status: "running", startedAt: now });
        }
        return taken.map((r): UserMessage => ({ role: "user", content: r.req.message }));
      },
    };
    const closeSteering = () => {
      turn.steerable = false;
    };
    void (async () => {
      let result: EmbeddedRunResult;
      try {
        result = await agentCommand(this.rt, {
          runId: host.runId,
          sessionKey: host.sessionKey,
          agentId: host.req.agentId,
          message,
          model: host.req.model,
          thinking: host.req.thinking,
          timeoutSeconds: host.req.timeout,
          lane: host.req.lane,
          promptMode: host.req.promptMode,
          extraSystemPrompt: host.req.extraSystemPrompt,
          signal: controller.signal,
          steering,
          onLoopEnd: closeSteering,
          onStarted: ({ startedAt }) => {
            host.phase = "running";
            // Collected messages run inside this turn from now on, so a restart must report them with the host
            // instead of running them a second time (as steered messages are, once taken).
            this.rt.store.transaction(() => {
              for (const r of [host, ...turn.merged])
                this.rt.store.updateRun(r.runId, { status: "running", startedAt });
            });
          },
        });
      } catch (err) {
        // agentCommand never throws by contract; if it does, the run still ends recorded.
        const now = this.rt.clock.now();
        result = {
          runId: host.runId,
          sessionKey: host.sessionKey,
          status: "error",
          stopReason: "error",
          payloads: [],
          usage: zeroUsage(),
          startedAt: now,
          endedAt: now,
          durationMs: 0,
          laneWaitMs: 0,
          steps: 0,
          model: "",
          error: { message: (err as Error)?.message ?? String(err), kind: "unknown" },
        };
      }
      closeSteering();
      const final = toFinal(result);
      const record = {
        status: result.status,
        startedAt: result.startedAt,
        endedAt: result.endedAt,
        stopReason: result.stopReason,
        error: result.error?.message,
      };
      this.rt.store.transaction(() => {
        this.rt.store.updateRun(host.runId, { ...record, result: final as unknown as Record<string, unknown> });
        for (const m of turn.merged) {
          this.rt.store.updateRun(m.runId, {
            ...record,
            result: { ...final, runId: m.runId, mergedInto: host.runId } as unknown as Record<string, unknown>,
          });
        }
      });
      s.active = undefined;
      this.finish(host, final);
      for (const m of turn.merged) this.finish(m, { ...final, runId: m.runId, mergedInto: host.runId });
      // Steered too late: the run could no longer take them, so they become followups, first in line.
      if (turn.steer.length) {
        const late = turn.steer.splice(0);
        s.pending.unshift(...late);
        late.forEach((r, i) => {
          r.phase = "pending";
          r.mode = "followup";
          this.setReceipt(r, { kind: "queued", position: i + 1, mode: "followup" });
        });
      }
      this.schedule(s);
    })();
  }

  /** Resolves with the final result; for a finished run (also from before a restart) at once. */
  async final(runId: string): Promise<AgentFinal> {
    const live = this.live.get(runId);
    if (live) return live.done.promise;
    const run = this.rt.store.getRun(runId);
    if (!run) throw new RunNotFoundError(runId);
    const final = finalFromRecord(run);
    if (!final) throw new Error(`run ${runId} is ${run.status} but not active in this process`);
    return final;
  }

  /** Waits up to timeoutMs for the run to end; never stops it. */
  async wait(runId: string, timeoutMs = 30000): Promise<WaitResult> {
    const live = this.live.get(runId);
    if (!live) {
      const run = this.rt.store.getRun(runId);
      if (!run) throw new RunNotFoundError(runId);
      return waitResultOf(run);
    }
    let timer: unknown;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = this.rt.clock.setTimeout(() => resolve("timeout"), Math.max(0, timeoutMs));
    });
    const winner = await Promise.race([live.done.promise, timedOut]);
    this.rt.clock.clearTimeout(timer);
    if (winner === "timeout") {
      const queued = live.phase === "pending" || live.phase === "queued";
      return { runId, status: queued ? "pending" : "timeout" };
    }
    return waitResultOf(this.rt.store.getRun(runId)!);
  }

  /** chat.abort: queued turns of the session first, then the active run (or just `runId`). */
  abort(sessionKey: string, runId?: string): { aborted: string[] } {
    const aborted: string[] = [];
    const s = this.sessions.get(sessionKey);
    if (!s) return { aborted };
    const match = (r: LiveRun) => runId === undefined || r.runId === runId;
    // The [Queue overflow] notice is a queued turn too; without this it would still run after the abort.
    if (runId === undefined) s.overflow = { count: 0, summaries: [] };
    for (const r of s.pending.filter(match)) {
      s.pending.splice(s.pending.indexOf(r), 1);
      this.drop(r, "aborted by request", "aborted");
      aborted.push(r.runId);
    }
    if (s.active) {
      for (const r of s.active.steer.filter(match)) {
        s.active.steer.splice(s.active.steer.indexOf(r), 1);
        this.drop(r, "aborted by request", "aborted");
        aborted.push(r.runId);
      }
      if (match(s.active.host) || runId === undefined) {
        s.active.host.controller?.abort(new Error("aborted by request"));
        aborted.push(s.active.host.runId);
      }
    }
    this.schedule(s);
    return { aborted };
  }

  /**
   * After a crash or restart: runs that were active are failed with stopReason "gateway_restart" (their input is
   * in the run record and the transcript); queued inputs run again in their accepted order.
   */
  recover(): { failed: string[]; requeued: string[] } {
    const failed: string[] = [];
    const requeued: string[] = [];
    const now = this.rt.clock.now();
    for (const run of this.rt.store.listRuns({ statuses: ["running"] })) {
      if (this.live.has(run.runId) || ownedByLiveProcess(run)) continue;
      const error = "the gateway stopped while this run was active (it did not finish); send the message again";
      const final = endedFinal(run.runId, "failed", "gateway_restart", error);
      this.rt.store.updateRun(run.runId, {
        status: "error",
        endedAt: now,
        stopReason: "gateway_restart",
        error,
        result: final as unknown as Record<string, unknown>,
      });
      this.rt.bus.emit(run.runId, run.sessionKey, "lifecycle", {
        phase: "error",
        endedAt: now,
        status: "error",
        stopReason: "gateway_restart",
        error,
        kind: "gateway_restart",
      });
      this.rt.bus.endRun(run.runId);
      failed.push(run.runId);
    }
    for (const rec of this.rt.store.listRuns({ statuses: ["queued"] })) {
      if (this.live.has(rec.runId) || ownedByLiveProcess(rec)) continue;
      const req = rec.params as unknown as AgentRequest & { agentId: string };
      const run: LiveRun = {
        runId: rec.runId,
        sessionKey: rec.sessionKey,
        req,
        mode: req.queueMode === "collect" ? "collect" : "followup",
        phase: "pending",
        done: deferred(),
        acceptedAt: rec.acceptedAt,
      };
      this.live.set(run.runId, run);
      const s = this.sessions.get(rec.sessionKey) ?? this.newState(rec.sessionKey);
      s.pending.push(run);
      s.immediate = true;
      requeued.push(run.runId);
    }
    for (const s of this.sessions.values()) this.schedule(s);
    return { failed, requeued };
  }

  /** Stops accepting; gives running runs `graceMs` to finish, then aborts them and waits for their records. */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const pending = [...this.live.values()].map((r) => r.done.promise);
    if (pending.length === 0) return;
    let timer: unknown;
    const grace = new Promise<void>((resolve) => {
      timer = this.rt.clock.setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all(pending), grace]);
    this.rt.clock.clearTimeout(timer);
    // Queued inputs stay "queued" in the store: the next start runs them (recover()). Active runs are aborted.
    for (const s of this.sessions.values()) {
      if (s.timer !== undefined) this.rt.clock.clearTimeout(s.timer);
      s.active?.host.controller?.abort(new Error("gateway shutting down"));
    }
    const active = [...this.sessions.values()].flatMap((s) => (s.active ? [s.active.host.done.promise] : []));
    await Promise.all(active);
  }

  newRunId(): string {
    return randomUUID();
  }
}

const PROCESS_OWNER = currentProcessIdentity();

/**
 * A run accepted by another process that is still alive (e.g. a `loopgate agent --local` beside the gateway) is
 * that process's to finish, not a crash leftover. Same pid with a different start time is a recycled pid: dead.
 */
function ownedByLiveProcess(run: RunRecord): boolean {
  const owner = (run.params as { owner?: { pid?: number; starttime?: string | null } }).owner;
  if (!owner?.pid || owner.pid === process.pid) return false;
  return isSameLiveProcess({ pid: owner.pid, starttime: owner.starttime });
}
