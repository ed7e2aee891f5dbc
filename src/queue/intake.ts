import { currentProcessIdentity } from "../infra/process-liveness.js";
import type { AgentRequest, Receipt } from "../protocol/run.js";
import { normalizeSessionKey } from "../session/keys.js";
import { StorageUnavailableError } from "../storage/storage-fault.js";
import type { RunRecord } from "../storage/types.js";
import { QueueFullError, RunParamError, ServiceDrainingError } from "./errors.js";
import { controlOf, endedText, InBandAbort, interruptedReceipt } from "./in-band.js";
import { addLiveRun, dropRun, sessionState, setReceipt } from "./live-runs.js";
import { isQueueMode, type QueueMode, resolveQueueMode } from "./modes.js";
import { applyCap } from "./overflow.js";
import { launchTurn } from "./turn.js";
import type {
  AcceptedRun,
  IntakeGate,
  LiveRun,
  QueueCluster,
  QueueContext,
  ResolvedRequest,
  RunOrigin,
  SessionState,
} from "./types.js";

/**
 * Durable intake: an accepted message is a run record (status "queued", with its receipt) in the store before
 * `acceptMessage` resolves; only then is it routed by its queue mode. Accepts for one session are serialized in
 * this process (one at a time, in arrival order), so a session's messages are stored and queued in the order they
 * came, whatever the store's latency.
 */

/** How a message is handled, decided before anything is stored. */
export interface Route {
  mode: QueueMode;
  busy: boolean;
  steering: boolean;
  queueing: boolean;
}

/**
 * The run record's params keep who started the run under this key, beside the wire params: the `agent` params
 * schema is strict, so no wire field can be named so, and a run recovered after a restart keeps its origin.
 */
export const ORIGIN_PARAM = "origin";

/** The origin a stored run record carries (see ORIGIN_PARAM), if any. */
export function originOfRecord(run: RunRecord): RunOrigin | undefined {
  const origin = run.params[ORIGIN_PARAM] as { actor?: unknown; token?: unknown } | undefined;
  if (typeof origin?.actor !== "string") return undefined;
  return { actor: origin.actor, ...(typeof origin.token === "string" ? { token: origin.token } : {}) };
}

/** What of an origin is kept with the run (in memory and in its record): who, and with which token. */
function keptOrigin(origin: RunOrigin): RunOrigin {
  return { actor: origin.actor, ...(origin.token !== undefined ? { token: origin.token } : {}) };
}

/**
 * One resolution of the session the message names and one read (`readIntake`: the idempotency key's run and the
 * session row) before the durable write; `gate` (the caller's access and spend checks) runs in between. The answer
 * says whether the message created its session.
 */
export function acceptMessage(
  ctx: QueueContext,
  req: AgentRequest,
  origin?: RunOrigin,
  gate?: IntakeGate,
): Promise<AcceptedRun> {
  const target = targetOf(ctx, req);
  return ctx.accepting.run(laneOf(req, target), () => acceptOne(ctx, req, target, origin, gate));
}

/**
 * The session a request names, resolved once, without the store: a key (normalized), a session id (looked up by
 * the intake's read), or the params error accept refuses it with.
 */
type Target = { key: string; agentId: string } | { sessionId: string } | { error: Error };

function targetOf(ctx: QueueContext, req: AgentRequest): Target {
  if (req.queueMode !== undefined && !isQueueMode(req.queueMode)) {
    return { error: new RunParamError("queueMode", "expected steer, followup, collect or interrupt") };
  }
  const askedFor = req.agentId !== undefined ? ctx.deps.agentProblem(req.agentId) : undefined;
  if (askedFor) return { error: new RunParamError("agentId", askedFor) };
  if (req.sessionId && !req.sessionKey) return { sessionId: req.sessionId };
  try {
    const parsed = normalizeSessionKey(req.sessionKey, req.agentId ?? ctx.deps.defaultAgentId());
    return { key: parsed.key, agentId: parsed.agentId };
  } catch (err) {
    return { error: err as Error }; // a bad key or agent id, reported as normalizeSessionKey words it
  }
}

/**
 * The key accepts are serialized by: the session as the request names it (a request naming its session by id
 * waits behind the other requests naming that id).
 */
function laneOf(req: AgentRequest, target: Target): string {
  if ("key" in target) return target.key;
  if ("sessionId" in target) return `id:${target.sessionId}`;
  return `raw:${req.sessionKey ?? ""}`;
}

async function acceptOne(
  ctx: QueueContext,
  given: AgentRequest,
  target: Target,
  origin?: RunOrigin,
  gate?: IntakeGate,
): Promise<AcceptedRun> {
  const { store } = ctx.deps;
  const live = ctx.live.get(given.idempotencyKey);
  if (live) {
    await gate?.({ sessionKey: live.sessionKey, existing: live, newSession: false });
    return liveAnswer(live);
  }
  if ("error" in target) {
    // a repeat of a stored run answers as the run, whatever these params say; anything else is refused
    const existing = await store.getRun(given.idempotencyKey);
    if (!existing) throw target.error;
    await gate?.({ sessionKey: existing.sessionKey, existing, newSession: false });
    return existingAnswer(existing);
  }
  const seen = await store.readIntake(given.idempotencyKey, "key" in target ? { key: target.key } : target);
  if (seen.run) {
    await gate?.({ sessionKey: seen.run.sessionKey, existing: seen.run, newSession: false });
    return existingAnswer(seen.run);
  }
  if (ctx.draining) throw new ServiceDrainingError();
  refuseWhileStorageFails(ctx);
  const sessionKey = "key" in target ? target.key : seen.session?.key;
  if (sessionKey === undefined) throw new RunParamError("sessionId", `unknown session id "${given.sessionId}"`);
  const newSession = seen.session === undefined;
  const parsed = "key" in target ? target : normalizeSessionKey(sessionKey, given.agentId ?? ctx.deps.defaultAgentId());
  // checked before anything is stored: an unknown agent gets no session row and no workspace
  const keyAgent = ctx.deps.agentProblem(parsed.agentId);
  if (keyAgent) throw new RunParamError("sessionKey", keyAgent);
  const req = (await gate?.({ sessionKey, newSession })) ?? given;
  const full = resolveRequest(ctx, req, parsed.agentId);
  const sessionMode = seen.session?.queueMode;
  const acceptedAt = ctx.deps.clock.now();
  const before = ctx.sessions.get(sessionKey);
  const route = routeOf(ctx, full, sessionMode, before, origin);
  refuseWhenFull(ctx, req, sessionKey, route, before);
  const receipt = receiptOf(ctx, route, before, { message: full.message, origin });
  try {
    await storeAccepted(ctx, full, sessionKey, acceptedAt, receipt, origin);
  } catch (err) {
    // the same run id accepted meanwhile (another process, or a request for another session): its first answer
    const first = await store.getRun(req.idempotencyKey).catch(() => undefined);
    if (first) return existingAnswer(first);
    throw err;
  }
  if (ctx.cluster) {
    const routed = await routeInCluster(ctx, ctx.cluster, full, sessionKey, acceptedAt, receipt);
    return { ...routed, newSession };
  }
  // Stored. What ran meanwhile (a turn ended, a loop stopped taking steered messages) is handled by enqueue: it
  // looks at the session as it is now.
  const state = ctx.sessions.get(sessionKey);
  ctx.deps.onReceived?.({ runId: req.idempotencyKey, sessionKey, agentId: full.agentId, message: full.message });
  const run = addLiveRun(ctx, {
    runId: req.idempotencyKey,
    sessionKey,
    req: full,
    mode: route.mode,
    acceptedAt,
    ...(origin ? { origin: keptOrigin(origin) } : {}),
    receipt,
  });
  const s = state ?? sessionState(ctx, sessionKey);
  s.lastEnqueueAt = acceptedAt;
  // the receipt event goes out first, so a client sees it before the run's own events
  ctx.deps.bus.emit(run.runId, run.sessionKey, "queue", { receipt });
  enqueue(ctx, s, run, route);
  // an interrupt's receipt says what it actually stopped and dropped (enqueue corrects the stored one if needed)
  return {
    runId: run.runId,
    sessionKey,
    status: "accepted",
    acceptedAt,
    existing: false,
    newSession,
    receipt: run.receipt ?? receipt,
  };
}

/**
 * Several nodes: the stored input goes where its session runs. This node adopts it (with the session's other queued
 * inputs, in acceptance order) when it owns the session or can take it; else the owner is told and adopts it. The
 * answer comes once routed; its receipt is the adopted run's when this node runs it.
 */
async function routeInCluster(
  ctx: QueueContext,
  cluster: QueueCluster,
  req: ResolvedRequest,
  sessionKey: string,
  acceptedAt: number,
  stored: Receipt,
): Promise<AcceptedRun> {
  const runId = req.idempotencyKey;
  ctx.deps.onReceived?.({ runId, sessionKey, agentId: req.agentId, message: req.message });
  await cluster.routeStored(sessionKey);
  const receipt = ctx.live.get(runId)?.receipt ?? stored;
  return { runId, sessionKey, status: "accepted", acceptedAt, existing: false, receipt };
}

/** A store that cannot write would lose the message or fail its run half way: refused, retryable, until it can. */
function refuseWhileStorageFails(ctx: QueueContext): void {
  const fault = ctx.deps.store.storageFault?.();
  if (fault) throw new StorageUnavailableError(fault);
}

/** The same idempotency key while the first is still live in this process. */
function liveAnswer(run: LiveRun): AcceptedRun {
  return {
    runId: run.runId,
    sessionKey: run.sessionKey,
    status: "accepted",
    acceptedAt: run.acceptedAt,
    existing: true,
    receipt: run.receipt ?? { kind: "started" },
  };
}

/** The same idempotency key again: the first answer, and nothing new runs. */
function existingAnswer(existing: RunRecord): AcceptedRun {
  return {
    runId: existing.runId,
    sessionKey: existing.sessionKey,
    status: "accepted",
    acceptedAt: existing.acceptedAt,
    existing: true,
    receipt: (existing.receipt as Receipt | undefined) ?? { kind: "started" },
  };
}

/** Checks the params the RPC schema cannot (the model, the auth profile) and names the run's agent. */
function resolveRequest(ctx: QueueContext, req: AgentRequest, agentId: string): ResolvedRequest {
  const { deps } = ctx;
  const named = req.provider && req.model && !req.model.includes("/") ? `${req.provider}/${req.model}` : req.model;
  const model = named !== undefined && deps.chooseModel ? chosenModel(deps.chooseModel, named) : named;
  const authProblem = req.authProfile !== undefined ? deps.authProfileProblem?.(req.authProfile) : undefined;
  if (authProblem) throw new RunParamError("authProfile", authProblem);
  return { ...req, agentId, model };
}

/** An alias or bare id made "provider/model"; a model that cannot be chosen is refused before anything is stored. */
function chosenModel(choose: (input: string) => string, input: string): string {
  try {
    return choose(input);
  } catch (err) {
    throw new RunParamError("model", (err as Error).message);
  }
}

export function routeOf(
  ctx: QueueContext,
  req: ResolvedRequest,
  sessionMode: string | undefined,
  state?: SessionState,
  origin?: RunOrigin,
): Route {
  const cfg = ctx.deps.config();
  // A command picks its own mode whatever the queue mode says (e.g. `/stop` interrupts, `/new` waits its turn).
  const resolved = resolveQueueMode({
    message: ctx.deps.commandMode?.(req.message) ?? req.queueMode,
    session: sessionMode,
    channel: req.channel,
    byChannel: cfg.byChannel,
    global: cfg.mode,
  });
  // a sender denied in-band control (SPEC 21) waits its turn instead of clearing the session
  const mode = resolved === "interrupt" && origin?.control === false ? "followup" : resolved;
  const busy = state !== undefined && (state.active !== undefined || state.pending.length > 0);
  const steering = busy && mode === "steer" && state.active?.steerable === true;
  return { mode, busy, steering, queueing: busy && !steering && mode !== "interrupt" };
}

/** Drop policy `new`: the newcomer is refused at the cap, and nothing is stored for it. */
function refuseWhenFull(ctx: QueueContext, req: AgentRequest, key: string, route: Route, state?: SessionState): void {
  const { cap, drop } = ctx.deps.config();
  if (!route.queueing || !state || state.pending.length < cap || drop !== "new") return;
  const reason = new QueueFullError(key, cap);
  ctx.deps.bus.emit(req.idempotencyKey, key, "queue", { receipt: { kind: "rejected", reason: reason.message } });
  throw reason;
}

export function receiptOf(
  ctx: QueueContext,
  route: Route,
  state?: SessionState,
  sender?: { message: string; origin?: RunOrigin },
): Receipt {
  if (!route.busy || !state) return { kind: "started" };
  if (route.steering && state.active) return { kind: "steered", into: state.active.host.runId };
  if (route.mode === "interrupt") {
    // what it will stop and drop as the session is now: stored with the message, corrected by `interrupt` if the
    // session changed while the message was being stored
    const by = controlOf(ctx, sender?.message ?? "", sender?.origin);
    return interruptedReceipt(by, stoppable(state), droppable(state));
  }
  return {
    kind: "queued",
    // at the cap one message is dropped first, so the newcomer lands at the cap's position
    position: Math.min(state.pending.length + 1, ctx.deps.config().cap),
    mode: route.mode === "collect" ? "collect" : "followup",
  };
}

/** The receipt is known before anything runs, so it is stored with the run record in the same commit. */
async function storeAccepted(
  ctx: QueueContext,
  req: ResolvedRequest,
  key: string,
  acceptedAt: number,
  receipt: Receipt,
  origin: RunOrigin | undefined,
) {
  await ctx.deps.store.acceptInput(
    { key, agentId: req.agentId, now: acceptedAt },
    {
      runId: req.idempotencyKey,
      sessionKey: key,
      status: "queued",
      acceptedAt,
      receipt: receipt as unknown as Record<string, unknown>,
      // The accepting process is recorded so recovery in another process never takes over a live owner's runs.
      params: {
        ...req,
        owner: currentProcessIdentity(),
        ...(origin ? { [ORIGIN_PARAM]: keptOrigin(origin) } : {}),
      } as unknown as Record<string, unknown>,
    },
  );
}

export function enqueue(ctx: QueueContext, s: SessionState, run: LiveRun, route: Route): void {
  const busyNow = s.active !== undefined || s.pending.length > 0;
  if (!route.busy && !busyNow) launchTurn(ctx, s, run, [], run.req.message);
  else if (!route.busy) {
    // the session got work while this message was being stored: it waits its turn
    s.pending.push(run);
    ctx.schedule(s);
  } else if (route.steering && s.active) {
    run.phase = "merged";
    s.active.steer.push(run);
  } else if (route.mode === "interrupt") interrupt(ctx, s, run);
  else {
    const { cap, drop } = ctx.deps.config();
    if (s.pending.length >= cap) {
      // drop "new" refuses the newcomer, also one stored before this node saw the queue full: an input another node
      // accepted and this node adopted, or one accepted here while the queue filled. Its sender hears it in the final.
      if (drop === "new") {
        dropRun(ctx, run, new QueueFullError(run.sessionKey, cap).message);
        return;
      }
      applyCap(ctx, s, drop);
    }
    s.pending.push(run);
    ctx.schedule(s);
  }
}

/** The running turn an interrupt would abort (its host run), unless it is already aborted. */
function stoppable(s: SessionState): string[] {
  const host = s.active?.host;
  return host && !host.controller?.signal.aborted ? [host.runId] : [];
}

/** The inputs an interrupt would drop: queued messages, and messages steered into the turn it has not taken. */
function droppable(s: SessionState): string[] {
  return [...s.pending, ...(s.active?.steer ?? [])].map((r) => r.runId);
}

/**
 * Clears what waits in the session, aborts the running turn, and queues the newcomer to run first. Never silent
 * (SPEC 21): each dropped input and the aborted run end naming the newcomer's sender and its command, and the
 * newcomer's receipt lists them.
 */
function interrupt(ctx: QueueContext, s: SessionState, run: LiveRun): void {
  const by = controlOf(ctx, run.req.message, run.origin);
  const stopped = stoppable(s);
  const dropped = droppable(s);
  const reason = endedText("dropped", by);
  for (const p of s.pending.splice(0)) dropRun(ctx, p, reason, "failed", by);
  // Also queued input: messages steered into the run being aborted that it has not taken yet (they would
  // otherwise become followups ahead of this message), and a pending [Queue overflow] notice.
  for (const p of s.active?.steer.splice(0) ?? []) dropRun(ctx, p, reason, "failed", by);
  s.overflow = { count: 0, summaries: [] };
  s.pending.push(run);
  s.immediate = true;
  if (stopped.length > 0) s.active?.host.controller?.abort(new InBandAbort(by));
  const receipt = interruptedReceipt(by, stopped, dropped);
  if (JSON.stringify(receipt) === JSON.stringify(run.receipt)) run.receipt = receipt;
  else setReceipt(ctx, run, receipt);
  ctx.schedule(s);
}
