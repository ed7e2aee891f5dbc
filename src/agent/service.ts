import { randomUUID } from "node:crypto";
import type { PromptMode } from "../prompt/system-prompt.js";
import type { ThinkingLevel, Usage } from "../providers/types.js";
import { DEFAULT_AGENT_ID, normalizeSessionKey } from "../session/keys.js";
import type { RunRecord } from "../storage/types.js";
import { agentCommand } from "./agent-command.js";
import type { EmbeddedRunResult } from "./run-embedded.js";
import type { ReplyPayload } from "./reply.js";
import type { AgentRuntime } from "./runtime.js";

/** The `agent` RPC params (SPEC 14), also what the CLI sends. */
export interface AgentRequest {
  message: string;
  idempotencyKey: string;
  agentId?: string;
  sessionKey?: string;
  sessionId?: string;
  model?: string;
  provider?: string;
  thinking?: ThinkingLevel;
  /** seconds; 0 = unlimited */
  timeout?: number;
  lane?: string;
  promptMode?: PromptMode;
  extraSystemPrompt?: string;
  queueMode?: string;
  label?: string;
  deliver?: boolean;
  channel?: string;
}

export interface AcceptedRun {
  runId: string;
  sessionKey: string;
  status: "accepted";
  acceptedAt: number;
  /** true when the idempotency key named a run that already existed: nothing new was started */
  existing: boolean;
}

export type WireStatus = "ok" | "error" | "timeout";

export interface AgentFinal {
  runId: string;
  status: WireStatus;
  summary: "completed" | "failed" | "aborted";
  stopReason?: string;
  result: {
    payloads: ReplyPayload[];
    meta: { durationMs: number; usage: Usage; model?: string; laneWaitMs?: number; steps?: number };
  };
  error?: string;
}

export interface WaitResult {
  runId: string;
  status: WireStatus | "pending";
  startedAt?: number;
  endedAt?: number;
  error?: string;
  stopReason?: string;
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

interface LiveRun {
  runId: string;
  sessionKey: string;
  controller: AbortController;
  phase: "queued" | "running";
  done: Promise<AgentFinal>;
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

function finalFromRecord(run: RunRecord): AgentFinal | undefined {
  if (run.status === "queued" || run.status === "running") return undefined;
  if (run.result) return run.result as unknown as AgentFinal;
  return {
    runId: run.runId,
    status: run.status === "ok" ? "ok" : run.status === "timeout" ? "timeout" : "error",
    summary: run.status === "ok" ? "completed" : run.status === "aborted" ? "aborted" : "failed",
    stopReason: run.stopReason,
    result: { payloads: [], meta: { durationMs: (run.endedAt ?? 0) - (run.startedAt ?? run.acceptedAt), usage: zeroUsage() } },
    ...(run.error ? { error: run.error } : {}),
  };
}

function zeroUsage(): Usage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
}

/**
 * The facade the gateway and the CLI drive: durable accept, execution in the background, waiting, aborting.
 * An accepted input is a run record in the store before `accept` returns, so nothing accepted is lost.
 */
export class AgentService {
  readonly rt: AgentRuntime;
  private readonly live = new Map<string, LiveRun>();
  private draining = false;

  constructor(rt: AgentRuntime) {
    this.rt = rt;
  }

  get activeRunCount(): number {
    return this.live.size;
  }

  /** Validates, resolves the session, persists session + run record, starts the run; returns at once. */
  accept(req: AgentRequest): AcceptedRun {
    const existing = this.rt.store.getRun(req.idempotencyKey);
    if (existing) {
      return {
        runId: existing.runId,
        sessionKey: existing.sessionKey,
        status: "accepted",
        acceptedAt: existing.acceptedAt,
        existing: true,
      };
    }
    if (this.draining) throw new ServiceDrainingError();
    const agentId = req.agentId ?? DEFAULT_AGENT_ID;
    let sessionKey: string;
    if (req.sessionId && !req.sessionKey) {
      const s = this.rt.store.getSessionById(req.sessionId);
      if (!s) throw new RunParamError("sessionId", `unknown sessionId "${req.sessionId}"`);
      sessionKey = s.key;
    } else {
      sessionKey = normalizeSessionKey(req.sessionKey, agentId).key;
    }
    const parsed = normalizeSessionKey(sessionKey, agentId);
    const model = req.provider && req.model && !req.model.includes("/") ? `${req.provider}/${req.model}` : req.model;
    const acceptedAt = this.rt.clock.now();
    const params = { ...req, agentId: parsed.agentId, model } as Record<string, unknown>;
    this.rt.store.transaction(() => {
      this.rt.store.ensureSession(sessionKey, parsed.agentId, acceptedAt);
      this.rt.store.createRun({
        runId: req.idempotencyKey,
        sessionKey,
        status: "queued",
        acceptedAt,
        params,
        receipt: { kind: "started" },
      });
    });
    this.start(req.idempotencyKey, sessionKey, params as unknown as AgentRequest & { agentId: string });
    return { runId: req.idempotencyKey, sessionKey, status: "accepted", acceptedAt, existing: false };
  }

  private start(runId: string, sessionKey: string, req: AgentRequest & { agentId: string }): LiveRun {
    const controller = new AbortController();
    const liveRun: LiveRun = { runId, sessionKey, controller, phase: "queued", done: undefined as never };
    this.live.set(runId, liveRun);
    liveRun.done = (async () => {
      let result: EmbeddedRunResult;
      try {
        result = await agentCommand(this.rt, {
          runId,
          sessionKey,
          agentId: req.agentId,
          message: req.message,
          model: req.model,
          thinking: req.thinking,
          timeoutSeconds: req.timeout,
          lane: req.lane,
          promptMode: req.promptMode,
          extraSystemPrompt: req.extraSystemPrompt,
          signal: controller.signal,
          onStarted: ({ startedAt }) => {
            liveRun.phase = "running";
            this.rt.store.updateRun(runId, { status: "running", startedAt });
          },
        });
      } catch (err) {
        // agentCommand never throws by contract; if it does, the run still ends recorded.
        const now = this.rt.clock.now();
        result = {
          runId,
          sessionKey,
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
      const final = toFinal(result);
      this.rt.store.updateRun(runId, {
        status: result.status,
        startedAt: result.startedAt,
        endedAt: result.endedAt,
        stopReason: result.stopReason,
        error: result.error?.message,
        result: final as unknown as Record<string, unknown>,
      });
      this.live.delete(runId);
      this.rt.bus.endRun(runId);
      return final;
    })();
    return liveRun;
  }

  /** Resolves with the final result; for a finished run (also from before a restart) at once. */
  async final(runId: string): Promise<AgentFinal> {
    const live = this.live.get(runId);
    if (live) return live.done;
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
    const winner = await Promise.race([live.done, timedOut]);
    this.rt.clock.clearTimeout(timer);
    if (winner === "timeout") {
      return { runId, status: live.phase === "queued" ? "pending" : "timeout" };
    }
    return waitResultOf(this.rt.store.getRun(runId)!);
  }

  /** chat.abort: queued runs of the session first, then the active one. */
  abort(sessionKey: string, runId?: string): { aborted: string[] } {
    const targets = [...this.live.values()].filter(
      (r) => r.sessionKey === sessionKey && (runId === undefined || r.runId === runId),
    );
    targets.sort((a, b) => (a.phase === b.phase ? 0 : a.phase === "queued" ? -1 : 1));
    for (const r of targets) r.controller.abort(new Error("aborted by request"));
    return { aborted: targets.map((r) => r.runId) };
  }

  /** Stops accepting; gives running runs `graceMs` to finish, then aborts them and waits for their records. */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    const pending = [...this.live.values()].map((r) => r.done.catch(() => undefined));
    if (pending.length === 0) return;
    let timer: unknown;
    const grace = new Promise<void>((resolve) => {
      timer = this.rt.clock.setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all(pending), grace]);
    this.rt.clock.clearTimeout(timer);
    for (const r of this.live.values()) r.controller.abort(new Error("gateway shutting down"));
    await Promise.all(pending);
  }

  newRunId(): string {
    return randomUUID();
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
