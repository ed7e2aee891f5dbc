import type { ExecApprovalEvent, ExecApprovals } from "../agent/exec-approvals.js";
import type { EventBusPort } from "../events/bus-port.js";
import { agentEventJson } from "../events/event-json.js";
import type { Cadence } from "../infra/cadence.js";
import type { Clock } from "../infra/clock.js";
import type { AgentEvent, AgentEventOf } from "../infra/events.js";
import type { SessionEvent, SessionEvents } from "../infra/session-events.js";
import type { BudgetApprovals } from "../limits/budget-approvals.js";
import type { Diagnostic } from "../protocol/diagnostics.js";
import type { ChatEventPayload, SessionInfo, SessionMessageEvent, SessionsChangedEvent } from "../protocol/payloads.js";
import { ChatProjector } from "./chat-projection.js";
import { historyEntry } from "./history-entry.js";

/** What the broadcaster needs of a connection. */
export interface EventSink {
  /** ready, and allowed to see this run's events (access.ts) */
  canSee(sessionKey: string, runId: string): boolean;
  /** ready, and allowed to see and answer this session's exec approvals (access.ts) */
  canApprove(sessionKey: string): boolean;
  readonly ready: boolean;
  /** may see runs it did not start (operator.read / operator.admin); otherwise only the runs `watchRun` gave it */
  readonly seesAllRuns: boolean;
  /** ready, and allowed to read this session (operator.read inside the token's sessions: access.ts) */
  canReadSession(sessionKey: string): boolean;
  /** sends `{"type":"event","event":<name>,"payload":<payloadJson>,"seq":<next>}` */
  sendEventJson(prefix: string, payloadJson: string): void;
}

/** The start of an event frame; the payload JSON and the per-connection seq are appended. */
export function eventPrefix(event: string): string {
  return `{"type":"event","event":${JSON.stringify(event)},"payload":`;
}

const AGENT_PREFIX = eventPrefix("agent");
const CHAT_PREFIX = eventPrefix("chat");
const APPROVAL_REQUESTED_PREFIX = eventPrefix("exec.approval.requested");
const APPROVAL_RESOLVED_PREFIX = eventPrefix("exec.approval.resolved");
const BUDGET_REQUESTED_PREFIX = eventPrefix("budget.approval.requested");
const BUDGET_RESOLVED_PREFIX = eventPrefix("budget.approval.resolved");
const SESSIONS_CHANGED_PREFIX = eventPrefix("sessions.changed");
const SESSION_MESSAGE_PREFIX = eventPrefix("session.message");
const DIAGNOSTIC_PREFIX = eventPrefix("diagnostic");
/** how many sessions' chats (chat.history) one connection gets live from other nodes: the ones it opened last */
export const CHAT_SESSIONS_PER_CONNECTION = 8;
const noop = (): void => {};

/**
 * The one subscriber of the runtime's event bus on the gateway side. Each event is serialized once and the same
 * JSON goes to every connection that may see it (only the per-connection seq differs). The bus emits
 * synchronously and each connection's frames go out in send order, so a run's events reach every subscriber in
 * order and without gaps (a subscriber that cannot keep up is disconnected, never skipped).
 *
 * An event is offered only to the connections that could see it: those that see every run, and those that started
 * it. Asking every connection would cost O(connections) per event, which at a thousand streaming clients is most
 * of the gateway's CPU. `canSee` still decides.
 *
 * Runs executing on other gateway nodes (Postgres) reach the bus only while a connection here follows them, so the
 * broadcaster turns each way a client follows something into a reference-counted watch on the bus: a run it started
 * or replays (`watchRun`: agent, chat.send, agent.events), a session whose messages it follows
 * (sessions.messages.subscribe) or whose chat it opened (chat.history: the last CHAT_SESSIONS_PER_CONNECTION
 * sessions of the connection). A connection that follows nothing costs its node no read of another node's run.
 */
export class Broadcaster {
  private readonly sinks = new Set<EventSink>();
  /** sinks that may see runs they did not start */
  private readonly broad = new Set<EventSink>();
  /** runId → the other sinks that started it (their only runs) */
  private readonly owners = new Map<string, Set<EventSink>>();
  private readonly ownedBy = new Map<EventSink, Set<string>>();
  private readonly chat: ChatProjector;
  private readonly activeBySession = new Map<string, Set<string>>();
  private unsubscribe: (() => void) | undefined;
  private unsubscribeApprovals: (() => void) | undefined;
  /** runs whose events are held back: how many holders each has, and its events in the order they came */
  private readonly heldRuns = new Map<string, { depth: number; events: AgentEvent[] }>();
  /** sessions.subscribe: sinks told of every change to a session they may read */
  private readonly sessionFollowers = new Set<EventSink>();
  /** sessions.messages.subscribe: session key → the sinks following its messages */
  private readonly messageFollowers = new Map<string, Set<EventSink>>();
  private readonly followedBy = new Map<EventSink, Set<string>>();
  private unsubscribeSessions: (() => void) | undefined;
  private bus: EventBusPort | undefined;
  /** runId → the sinks watching it, and the bus watch they share (released with the last of them) */
  private readonly runWatches = new Map<string, { sinks: Set<EventSink>; release: () => void }>();
  private readonly watchesOf = new Map<EventSink, Set<string>>();
  /** sessionKey → the bus watch held for it, and by how many follows (message followers, chat views) */
  private readonly sessionWatches = new Map<string, { count: number; release: () => void }>();
  /** chat.history: the sessions each connection opened last, oldest first */
  private readonly chatViews = new Map<EventSink, string[]>();
  private describeSession: (key: string) => Promise<SessionInfo | undefined> = async () => undefined;
  private readonly clock: Clock;

  constructor(opts: { clock: Clock; chatDeltaIntervalMs: number; beat?: Cadence }) {
    this.clock = opts.clock;
    this.chat = new ChatProjector({
      emit: (payload) => this.sendChat(payload),
      clock: opts.clock,
      intervalMs: opts.chatDeltaIntervalMs,
      beat: opts.beat,
    });
  }

  attach(bus: EventBusPort): void {
    this.bus = bus;
    this.unsubscribe = bus.subscribe((ev) => this.onAgentEvent(ev));
  }

  /** exec.approval.requested / resolved go to the clients that may answer approvals of the run's session. */
  attachApprovals(approvals: ExecApprovals, budgets?: BudgetApprovals): void {
    const offExec = approvals.subscribe((ev) => this.onApprovalEvent(ev));
    // budget.approval.requested / resolved (SPEC 25) go to the same clients: those that may answer the session's
    const offBudget = budgets?.subscribe((ev) => {
      const [prefix, payload] =
        ev.type === "requested" ? [BUDGET_REQUESTED_PREFIX, ev.request] : [BUDGET_RESOLVED_PREFIX, ev.resolved];
      const json = JSON.stringify(payload);
      for (const sink of this.sinks) if (sink.canApprove(payload.sessionKey)) sink.sendEventJson(prefix, json);
    });
    this.unsubscribeApprovals = () => {
      offExec();
      offBudget?.();
    };
  }

  /**
   * sessions.changed / session.message from the runtime's session events; run status changes come from the
   * lifecycle events this broadcaster already sees. `describe` gives the session as sessions.list shows it.
   */
  attachSessions(events: SessionEvents, describe: (key: string) => Promise<SessionInfo | undefined>): void {
    this.describeSession = describe;
    this.unsubscribeSessions = events.subscribe((ev) => this.onSessionEvent(ev));
  }

  /** sessions.subscribe (on) / sessions.unsubscribe (off) */
  followSessions(caller: object, on: boolean): void {
    const sink = caller as EventSink;
    if (!this.sinks.has(sink)) return;
    if (on) this.sessionFollowers.add(sink);
    else this.sessionFollowers.delete(sink);
  }

  /** sessions.messages.subscribe (on) / unsubscribe (off) for one session */
  followMessages(caller: object, sessionKey: string, on: boolean): void {
    const sink = caller as EventSink;
    if (!this.sinks.has(sink)) return;
    const keys = this.followedBy.get(sink);
    if (on) {
      if (keys?.has(sessionKey)) return;
      if (keys) keys.add(sessionKey);
      else this.followedBy.set(sink, new Set([sessionKey]));
      const set = this.messageFollowers.get(sessionKey);
      if (set) set.add(sink);
      else this.messageFollowers.set(sessionKey, new Set([sink]));
      this.holdSession(sessionKey);
      return;
    }
    if (!keys?.has(sessionKey)) return;
    keys?.delete(sessionKey);
    this.unfollowMessages(sessionKey, sink);
  }

  /** Whether `caller` follows this session's messages already; how many sessions it follows. */
  messageFollowing(caller: object, sessionKey: string): { following: boolean; count: number } {
    const keys = this.followedBy.get(caller as EventSink);
    return { following: keys?.has(sessionKey) ?? false, count: keys?.size ?? 0 };
  }

  /** Whether a connection follows the session's messages (another node's message is read only then). */
  followsMessages(sessionKey: string): boolean {
    return this.messageFollowers.has(sessionKey);
  }

  private unfollowMessages(sessionKey: string, sink: EventSink): void {
    const set = this.messageFollowers.get(sessionKey);
    if (!set?.delete(sink)) return;
    if (set.size === 0) this.messageFollowers.delete(sessionKey);
    this.dropSession(sessionKey);
  }

  /**
   * chat.history: the connection shows this session's chat, so it gets the session's runs live wherever they execute
   * (only its last CHAT_SESSIONS_PER_CONNECTION sessions: a client paging through many sessions watches few).
   */
  viewChat(caller: object, sessionKey: string): void {
    const sink = caller as EventSink;
    if (!this.sinks.has(sink)) return;
    const views = this.chatViews.get(sink) ?? [];
    this.chatViews.set(sink, views);
    const at = views.indexOf(sessionKey);
    if (at >= 0) {
      views.splice(at, 1);
      views.push(sessionKey);
      return;
    }
    views.push(sessionKey);
    this.holdSession(sessionKey);
    if (views.length > CHAT_SESSIONS_PER_CONNECTION) this.dropSession(views.shift() as string);
  }

  private holdSession(sessionKey: string): void {
    const held = this.sessionWatches.get(sessionKey);
    if (held) held.count++;
    else this.sessionWatches.set(sessionKey, { count: 1, release: this.bus?.watchSession(sessionKey) ?? noop });
  }

  private dropSession(sessionKey: string): void {
    const held = this.sessionWatches.get(sessionKey);
    if (!held || --held.count > 0) return;
    this.sessionWatches.delete(sessionKey);
    held.release();
  }

  add(sink: EventSink): void {
    this.sinks.add(sink);
    if (sink.seesAllRuns) this.broad.add(sink);
  }

  remove(sink: EventSink): void {
    this.sinks.delete(sink);
    this.broad.delete(sink);
    for (const runId of this.ownedBy.get(sink) ?? []) this.unwatch(runId, sink);
    this.ownedBy.delete(sink);
    for (const runId of this.watchesOf.get(sink) ?? []) this.unwatchRemote(runId, sink);
    this.watchesOf.delete(sink);
    this.sessionFollowers.delete(sink);
    for (const key of this.followedBy.get(sink) ?? []) this.unfollowMessages(key, sink);
    this.followedBy.delete(sink);
    for (const key of this.chatViews.get(sink) ?? []) this.dropSession(key);
    this.chatViews.delete(sink);
  }

  /**
   * `caller` started `runId`: it gets the run's events (called inside `hold`, before any of them is delivered). A
   * caller that is not a connected sink has nothing to receive them with and is ignored.
   */
  watchRun(runId: string, caller: object): void {
    const sink = caller as EventSink;
    if (!this.sinks.has(sink)) return;
    this.watchRemote(runId, sink);
    if (sink.seesAllRuns) return;
    const set = this.owners.get(runId);
    if (set) set.add(sink);
    else this.owners.set(runId, new Set([sink]));
    const runs = this.ownedBy.get(sink);
    if (runs) runs.add(runId);
    else this.ownedBy.set(sink, new Set([runId]));
  }

  private unwatch(runId: string, sink: EventSink): void {
    const set = this.owners.get(runId);
    set?.delete(sink);
    if (set?.size === 0) this.owners.delete(runId);
  }

  /** The bus follows the run (when another node runs it) while at least one sink watches it. */
  private watchRemote(runId: string, sink: EventSink): void {
    // A bus of one process has no other node to follow, and a sink that sees every run owns none, so there is
    // nothing to release later: the two sets, the map entry and the end listener per turn (~0.7 KB) are skipped.
    // A sink that sees only its own runs keeps the end listener: it forgets a merged message's ownership.
    if (this.bus?.spansNodes === false && sink.seesAllRuns) return;
    const mine = this.watchesOf.get(sink) ?? new Set<string>();
    if (mine.has(runId)) return;
    this.watchesOf.set(sink, mine);
    mine.add(runId);
    const w = this.runWatches.get(runId);
    if (w) {
      w.sinks.add(sink);
      return;
    }
    const bus = this.bus;
    if (!bus) {
      this.runWatches.set(runId, { sinks: new Set([sink]), release: noop });
      return;
    }
    const offWatch = bus.watchRun(runId);
    // a message merged into another turn has no terminal event of its own: its end releases the watch
    const offEnd = bus.onRunEnd(runId, () => this.forgetRun(runId));
    this.runWatches.set(runId, {
      sinks: new Set([sink]),
      release: () => {
        offWatch();
        offEnd();
      },
    });
  }

  private unwatchRemote(runId: string, sink: EventSink): void {
    const w = this.runWatches.get(runId);
    if (!w?.sinks.delete(sink) || w.sinks.size > 0) return;
    this.runWatches.delete(runId);
    w.release();
  }

  /** A run's terminal event was delivered: nothing of it follows, its owners and watches are forgotten. */
  private forgetRun(runId: string): void {
    for (const sink of this.owners.get(runId) ?? []) this.ownedBy.get(sink)?.delete(runId);
    this.owners.delete(runId);
    const w = this.runWatches.get(runId);
    if (!w) return;
    this.runWatches.delete(runId);
    for (const sink of w.sinks) this.watchesOf.get(sink)?.delete(runId);
    w.release();
  }

  /** Sends to every sink that may see the run: the broad ones and the run's owners. */
  private send(prefix: string, json: string, sessionKey: string, runId: string): void {
    for (const sink of this.broad) if (sink.canSee(sessionKey, runId)) sink.sendEventJson(prefix, json);
    const owners = this.owners.get(runId);
    if (owners) for (const sink of owners) if (sink.canSee(sessionKey, runId)) sink.sendEventJson(prefix, json);
  }

  /**
   * Queues the run's bus events until `release(runId)`. Used around `service.accept` (the run may start, and a `/new`
   * turn may even end, before the accept's answer is back) and around agent.events' replay read: the reply goes out
   * first and the client watches the run before any of its events are delivered. Only this run's events wait, so a
   * store that answers slowly delays no other run's live events.
   */
  hold(runId: string): void {
    const held = this.heldRuns.get(runId);
    if (held) held.depth++;
    else this.heldRuns.set(runId, { depth: 1, events: [] });
  }

  release(runId: string): void {
    const held = this.heldRuns.get(runId);
    if (!held || --held.depth > 0) return;
    this.heldRuns.delete(runId);
    for (const ev of held.events) this.deliver(ev);
  }

  /**
   * A run of another node that nobody here follows started or ended in this session (heard from its pointers, no
   * event read): `sessions.changed` "status" for the clients that follow every session.
   */
  remoteRunStatus(sessionKey: string): void {
    this.sessionChanged(sessionKey, "status");
  }

  /** Runs in progress in a session, as seen on the bus (lifecycle start → end/error). */
  activeRuns(sessionKey: string): string[] {
    const set = this.activeBySession.get(sessionKey);
    return set ? [...set] : [];
  }

  /** An event for every ready connection (tick, shutdown). */
  broadcast(event: string, payload: unknown): void {
    const prefix = eventPrefix(event);
    const json = JSON.stringify(payload);
    for (const sink of this.sinks) if (sink.ready) sink.sendEventJson(prefix, json);
  }

  detach(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    for (const w of this.runWatches.values()) w.release();
    this.runWatches.clear();
    this.watchesOf.clear();
    for (const w of this.sessionWatches.values()) w.release();
    this.sessionWatches.clear();
    this.chatViews.clear();
    this.unsubscribeApprovals?.();
    this.unsubscribeApprovals = undefined;
    this.unsubscribeSessions?.();
    this.unsubscribeSessions = undefined;
    this.chat.dispose();
  }

  private onAgentEvent(ev: AgentEvent): void {
    const held = this.heldRuns.get(ev.runId);
    if (held) {
      held.events.push(ev);
      return;
    }
    this.deliver(ev);
  }

  private deliver(ev: AgentEvent): void {
    if (ev.stream === "lifecycle") {
      this.trackLifecycle(ev);
      const phase = ev.data.phase;
      if (phase === "start" || phase === "end" || phase === "error") this.sessionChanged(ev.sessionKey, "status");
    }
    // made once per event: the event store writer, which heard this event first, made it (events/event-json.ts)
    this.send(AGENT_PREFIX, agentEventJson(ev), ev.sessionKey, ev.runId);
    this.chat.onAgentEvent(ev);
    if (ev.stream === "lifecycle" && (ev.data.phase === "end" || ev.data.phase === "error")) this.forgetRun(ev.runId);
  }

  private onSessionEvent(ev: SessionEvent): void {
    if (ev.type === "changed") {
      this.sessionChanged(ev.sessionKey, ev.reason);
      return;
    }
    const followers = this.messageFollowers.get(ev.sessionKey);
    if (!followers) return;
    const payload: SessionMessageEvent = {
      sessionKey: ev.sessionKey,
      key: ev.sessionKey,
      messageSeq: ev.row.seq,
      message: historyEntry(ev.row),
    };
    const json = JSON.stringify(payload);
    for (const sink of followers)
      if (sink.canReadSession(ev.sessionKey)) sink.sendEventJson(SESSION_MESSAGE_PREFIX, json);
  }

  /**
   * sessions.changed to the subscribed sinks that may read the session; the session is described once for all. The
   * description is read from the store (asynchronously), so the notices go out through one chain: in the order the
   * changes happened, each to the followers subscribed when it is sent.
   */
  private sessionChanged(sessionKey: string, reason: SessionsChangedEvent["reason"]): void {
    if (this.sessionFollowers.size === 0) return;
    const ts = this.clock.now();
    this.sessionNotices = this.sessionNotices
      .then(async () => {
        const session = reason === "deleted" ? undefined : await this.describeSession(sessionKey);
        let json: string | undefined;
        for (const sink of this.sessionFollowers) {
          if (!sink.canReadSession(sessionKey)) continue;
          json ??= JSON.stringify({
            sessionKey,
            key: sessionKey,
            reason,
            ts,
            ...(session ? { session } : {}),
          } satisfies SessionsChangedEvent);
          sink.sendEventJson(SESSIONS_CHANGED_PREFIX, json);
        }
      })
      .catch(() => {
        // the session could not be read (the store is closing): this notice is lost, later ones still go out
      });
  }

  /** the sessions.changed notices being described and sent, one after another */
  private sessionNotices: Promise<void> = Promise.resolve();

  private onApprovalEvent(ev: ExecApprovalEvent): void {
    const [prefix, payload] =
      ev.type === "requested" ? [APPROVAL_REQUESTED_PREFIX, ev.request] : [APPROVAL_RESOLVED_PREFIX, ev.resolved];
    const json = JSON.stringify(payload);
    for (const sink of this.sinks) if (sink.canApprove(payload.sessionKey)) sink.sendEventJson(prefix, json);
  }

  /**
   * A stuck-session diagnostic goes to the clients that see every run (operator.read / operator.admin) whose token
   * grants its session (SPEC 21: diagnostics are a read path).
   */
  sendDiagnostic(d: Diagnostic): void {
    const json = JSON.stringify(d);
    for (const sink of this.broad)
      if (sink.canSee(d.sessionKey, d.runId ?? "")) sink.sendEventJson(DIAGNOSTIC_PREFIX, json);
  }

  private sendChat(payload: ChatEventPayload): void {
    this.send(CHAT_PREFIX, JSON.stringify(payload), payload.sessionKey, payload.runId);
  }

  private trackLifecycle(ev: AgentEventOf<"lifecycle">): void {
    const phase = ev.data.phase;
    if (phase === "start") {
      const set = this.activeBySession.get(ev.sessionKey);
      if (set) set.add(ev.runId);
      else this.activeBySession.set(ev.sessionKey, new Set([ev.runId]));
    } else if (phase === "end" || phase === "error") {
      const set = this.activeBySession.get(ev.sessionKey);
      if (!set) return;
      set.delete(ev.runId);
      if (set.size === 0) this.activeBySession.delete(ev.sessionKey);
    }
  }
}
