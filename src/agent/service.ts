import { randomUUID } from "node:crypto";
import type { ClusterNode } from "../cluster/node.js";
import { isConfiguredAgent, unknownAgentMessage } from "../config/agents.js";
import type { SessionChangeReason, SessionEvents } from "../infra/session-events.js";
import type { RecoveryOutcome } from "../protocol/diagnostics.js";
import type { AgentFinal, AgentRequest, Receipt, WaitResult, WireStatus } from "../protocol/run.js";
import { chooseModel } from "../providers/model-choice.js";
import { contentText } from "../providers/types.js";
import { RunParamError } from "../queue/errors.js";
import { originOfRecord } from "../queue/intake.js";
import type { QueueMode } from "../queue/modes.js";
import { SessionQueue } from "../queue/session-queue.js";
import type { AcceptedRun, IntakeGate, IntakeSight, QueueSessionView, RunOrigin } from "../queue/types.js";
import type { RunRecord, SessionRecord } from "../storage/types.js";
import { parseSlashCommand, runTurn } from "./run/index.js";
import type { AgentRuntime } from "./runtime.js";
import { SessionService } from "./session-service.js";

/** The session settings `patchSession` changes; `null` clears one (the agent's default applies again). */
export interface SessionSettingsPatch {
  label?: string | null;
  /** "provider/model" */
  model?: string | null;
  thinking?: string | null;
  verboseLevel?: string | null;
  reasoningLevel?: string | null;
  queueMode?: string | null;
  /** the user's auth profile pin (SPEC 23), kept across resets */
  authProfile?: string | null;
}

export { QueueFullError, RunNotFoundError, RunParamError, ServiceDrainingError } from "../queue/errors.js";
export type {
  AcceptedRun,
  AgentFinal,
  AgentRequest,
  IntakeGate,
  IntakeSight,
  Receipt,
  RunOrigin,
  WaitResult,
  WireStatus,
};

/**
 * Slash commands are never steered into a running turn as text: /new and /reset wait their turn (followup);
 * /stop aborts the active run and clears the queue, so it is an interrupt whatever the queue mode says.
 */
function slashCommandMode(message: string): QueueMode | undefined {
  const slash = parseSlashCommand(message);
  if (!slash) return undefined;
  return slash.command === "stop" ? "interrupt" : "followup";
}

/**
 * message_received (plugin) and message:received (internal) when a message arrives, not when its turn starts: a
 * steered, queued or collected message fires once too. Plugins load on first use, so the hooks wait for that.
 */
function messageReceived(rt: AgentRuntime, m: { runId: string; sessionKey: string; agentId: string; message: string }) {
  const ctx = { agentId: m.agentId, sessionKey: m.sessionKey, runId: m.runId };
  void rt
    .init()
    .then(() => {
      if (rt.pluginHooks.has("message_received"))
        void rt.pluginHooks.runObservers("message_received", { content: m.message }, ctx);
      return rt.fireInternal("message", "received", { ...ctx, content: m.message });
    })
    .catch((err) => rt.logger.warn(`message_received: ${(err as Error).message}`));
}

/**
 * The facade the gateway and the CLI drive: accept a message, await, wait for or abort its run, recover after a
 * restart, drain before a shutdown. The session queue (queue/) does the work and runs each turn through
 * `runTurn`.
 */
export class AgentService {
  readonly rt: AgentRuntime;
  /** sessions, runs and audit rows as the gateway's handlers read and change them (never the store directly) */
  readonly sessions: SessionService;
  private readonly queue: SessionQueue;
  private cluster?: ClusterNode;

  /** The node's cluster layer when the store is Postgres (several nodes), else undefined. */
  get clusterNode(): ClusterNode | undefined {
    return this.cluster;
  }

  constructor(rt: AgentRuntime) {
    this.rt = rt;
    this.sessions = new SessionService(rt.store, rt.sessionLifecycle);
    this.queue = new SessionQueue({
      store: rt.store,
      bus: rt.bus,
      clock: rt.clock,
      config: () => rt.config.messages.queue,
      runTurn: (spec) => runTurn(rt, spec),
      defaultAgentId: () => rt.defaultAgentId,
      agentProblem: (id) => (isConfiguredAgent(rt.config, id) ? undefined : unknownAgentMessage(rt.config, id)),
      chooseModel: (input) => chooseModel(rt.config, input),
      authProfileProblem: (id) => authProfileProblem(rt, id),
      commandMode: slashCommandMode,
      newId: randomUUID,
      onReceived: (m) => messageReceived(rt, m),
    });
  }

  /**
   * Several nodes on Postgres (src/cluster/): intake, idle sessions, recovery and drain go through the node. Bound
   * before the gateway recovers or serves.
   */
  attachCluster(node: ClusterNode): void {
    this.cluster = node;
    node.attach(this.queue, () => this.rt.runEvents.flush());
    this.queue.attachCluster(node);
  }

  get activeRunCount(): number {
    return this.queue.activeRunCount;
  }

  /** Run ids of the session's active turn (host and messages merged into it) and of its queued messages. */
  activeRuns(sessionKey: string): string[] {
    return this.queue.activeRuns(sessionKey);
  }

  /** What the session is doing now: its active turn's run id (absent when idle) and the messages queued behind it. */
  sessionActivity(sessionKey: string): { activeRunId?: string; queued: number } {
    return this.queue.activity(sessionKey);
  }

  /** Recent run records, newest first (the console's Runs page); see `Store.listRecentRuns`. */
  recentRuns(opts: { limit: number; sessionKey?: string }): Promise<RunRecord[]> {
    return this.rt.store.listRecentRuns(opts);
  }

  /** Number of sessions with queued or active work held in memory (idle sessions are dropped). */
  get busySessionCount(): number {
    return this.queue.busySessionCount;
  }

  /**
   * Durable: the message is a queued run record in the store before this returns; nothing runs before it does.
   * `origin` says who started the run (the audit ledger's actor); the run record keeps it across a restart.
   */
  /**
   * Durable intake (queue/intake.ts): one resolution of the session and one store read, `gate` (the caller's access
   * and spend checks) between that read and the write. The answer names the session and whether the message made it.
   */
  accept(req: AgentRequest, origin?: RunOrigin, gate?: IntakeGate): Promise<AcceptedRun> {
    return this.queue.accept(req, origin, gate);
  }

  /**
   * Who started the run, as `accept` was told, from memory (a live run, or one of an earlier process that recovery
   * read); undefined otherwise. Synchronous: the audit ledger asks for every row it makes. For a stored run, see
   * `originOfRun`.
   */
  originOf(runId: string): RunOrigin | undefined {
    return this.queue.originOf(runId);
  }

  /** The agent of a live run, from memory; undefined once it has ended (/metrics labels its run with it). */
  agentOf(runId: string): string | undefined {
    return this.queue.agentOf(runId);
  }

  /** Who started a stored run: from memory while it is live, else from its record. */
  originOfRun(run: RunRecord): RunOrigin | undefined {
    return this.queue.originOf(run.runId) ?? originOfRecord(run);
  }

  /** Resolves with the final result; for a finished run (also from before a restart) at once. */
  final(runId: string): Promise<AgentFinal> {
    return this.queue.final(runId);
  }

  /** Waits up to timeoutMs for the run to end; never stops it. */
  wait(runId: string, timeoutMs?: number): Promise<WaitResult> {
    return this.queue.wait(runId, timeoutMs);
  }

  /** chat.abort: queued turns of the session first, then the active run (or just `runId`). */
  abort(sessionKey: string, runId?: string): { aborted: string[] } {
    const out = this.queue.abort(sessionKey, runId);
    // several nodes: the session may run on another node; its owner aborts there
    this.cluster?.forwardAbort(sessionKey, runId);
    return out;
  }

  /** After a crash or restart: interrupted runs are failed with "gateway_restart"; queued inputs run again. */
  recover(): Promise<{ failed: string[]; requeued: string[] }> {
    return this.queue.recover();
  }

  /** Stops accepting; gives running runs `graceMs` to finish, then aborts them and waits for their records. */
  async drain(graceMs: number): Promise<void> {
    await this.queue.drain(graceMs);
    // several nodes: what waits here and never started goes to the other nodes now, not after a lease expiry
    if (this.cluster) {
      await this.cluster.handOff().catch((err: Error) => {
        // not lost: the inputs stay queued in the store, and the other nodes' sweepers take them after the lease
        this.rt.logger.warn("cluster: hand-off on drain failed", { error: err?.message ?? String(err) });
      });
    }
  }

  /** Inputs accepted and not started yet, over every session (health's queueDepth). */
  get queueDepth(): number {
    return this.queue.queueDepth;
  }

  /** Every session with work, as the stuck-session diagnostics see it. */
  inspectSessions(): QueueSessionView[] {
    return this.queue.inspect();
  }

  /** Stuck-session recovery of stale bookkeeping: only while `generation` is current; keeps every queued input. */
  releaseStaleSession(sessionKey: string, generation: number): RecoveryOutcome {
    return this.queue.releaseStaleSession(sessionKey, generation);
  }

  /** Stuck-session recovery of a stalled run: abort, drain for `drainMs`, else release the session around it. */
  abortStalledRun(opts: {
    sessionKey: string;
    runId: string;
    generation: number;
    reason: string;
    drainMs: number;
  }): Promise<RecoveryOutcome> {
    return this.queue.abortStalledRun(opts);
  }

  newRunId(): string {
    return randomUUID();
  }

  /** Session created / reset / deleted / patched and transcript messages appended, for clients that follow them. */
  get sessionEvents(): SessionEvents {
    return this.rt.sessionEvents;
  }

  /** Tells the session's followers what happened to it (a gateway method reset, deleted or created it). */
  sessionChanged(sessionKey: string, reason: SessionChangeReason): void {
    this.rt.sessionEvents.emit({ type: "changed", sessionKey, reason });
  }

  /** The stored session, or undefined. */
  session(key: string): Promise<SessionRecord | undefined> {
    return this.rt.store.getSession(key);
  }

  sessionById(sessionId: string): Promise<SessionRecord | undefined> {
    return this.rt.store.getSessionById(sessionId);
  }

  /** Creates the session when it does not exist (followers hear "created"); `created` says whether it did. */
  async createSession(key: string, agentId: string): Promise<{ session: SessionRecord; created: boolean }> {
    const existing = await this.rt.store.getSession(key);
    if (existing) return { session: existing, created: false };
    const session = await this.rt.store.ensureSession(key, agentId, this.rt.clock.now());
    this.sessionChanged(key, "created");
    return { session, created: true };
  }

  /**
   * Changes the session's settings; its next runs use them (a run already going keeps what it started with). The
   * session must exist. Followers hear "patched".
   */
  async patchSession(key: string, patch: SessionSettingsPatch): Promise<SessionRecord | undefined> {
    if (!(await this.rt.store.getSession(key))) return undefined;
    const fields: Parameters<AgentRuntime["store"]["updateSession"]>[1] = { updatedAt: this.rt.clock.now() };
    // undefined in a store patch clears the column, so only the settings named in the patch are passed on
    if (patch.label !== undefined) fields.label = patch.label ?? undefined;
    if (patch.model !== undefined) fields.modelOverride = patch.model === null ? undefined : this.chosen(patch.model);
    if (patch.thinking !== undefined) fields.thinking = patch.thinking ?? undefined;
    if (patch.verboseLevel !== undefined) fields.verboseLevel = patch.verboseLevel ?? undefined;
    if (patch.reasoningLevel !== undefined) fields.reasoningLevel = patch.reasoningLevel ?? undefined;
    if (patch.queueMode !== undefined) fields.queueMode = patch.queueMode ?? undefined;
    if (patch.authProfile !== undefined) {
      const problem = patch.authProfile === null ? undefined : authProfileProblem(this.rt, patch.authProfile);
      if (problem) throw new RunParamError("authProfile", problem);
      fields.authProfileOverride = patch.authProfile ?? undefined;
    }
    await this.rt.store.updateSession(key, fields);
    this.sessionChanged(key, "patched");
    return this.rt.store.getSession(key);
  }

  /** A session's model (alias, bare id or "provider/model") as "provider/model", or invalid_params saying why not. */
  private chosen(model: string): string {
    try {
      return chooseModel(this.rt.config, model);
    } catch (err) {
      throw new RunParamError("model", (err as Error).message);
    }
  }

  /** The text of the first user message of the session's current transcript (a title), if any. */
  async firstUserText(session: SessionRecord): Promise<string | undefined> {
    // seq starts at 1 in each generation: these are its first rows
    const rows = await this.rt.store.readTranscript(session.key, {
      generation: session.generation,
      beforeSeq: 9,
      limit: 8,
    });
    const first = rows.find((r) => r.message?.role === "user");
    return first?.message && first.message.role === "user" ? contentText(first.message.content) : undefined;
  }

  /** The text of the last message of the session's current transcript, if any. */
  async lastMessageText(session: SessionRecord): Promise<string | undefined> {
    const rows = await this.rt.store.readTranscript(session.key, {
      generation: session.generation,
      limit: 1,
      kinds: ["message"],
    });
    const m = rows[0]?.message;
    if (!m) return undefined;
    if (m.role === "assistant") return m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    return contentText(m.content);
  }
}

/** Why `id` is not an auth profile of this process (naming the ones there are), or undefined when it is one. */
function authProfileProblem(rt: Pick<AgentRuntime, "authProfiles">, id: string): string | undefined {
  if (rt.authProfiles.has(id)) return undefined;
  const known = rt.authProfiles.list.map((p) => p.id);
  return `unknown auth profile "${id}" (configured: ${known.length ? known.join(", ") : "none"})`;
}
