/**
 * What the console knows, fed by the gateway's events and replies: the session list, the runs it watched live (text,
 * reasoning, tool calls, blocks, retries and fallbacks), pending exec approvals, and stuck-session diagnostics. Views
 * subscribe with `useModel`; every change bumps one version number.
 */
import { useEffect, useState } from "preact/hooks";
import type { Diagnostic, DiagnosticsListResult } from "../../src/protocol/diagnostics";
import type { McpServerHealth, McpStatusResult } from "../../src/protocol/mcp";
import type { SessionInfo, SessionListDefaults, SessionsListResult } from "../../src/protocol/payloads";
import { APPROVAL_KINDS, type PendingApproval, pendingOf } from "./approvals";
import { type EventFrame, type GatewayClient, RpcError } from "./gateway";

export type { Diagnostic } from "../../src/protocol/diagnostics";
// wire shapes: the gateway's own definitions (type-only imports, nothing of src/ is bundled)
export type { SessionActivity, SessionInfo } from "../../src/protocol/payloads";

export interface ToolCall {
  id: string;
  name: string;
  args: unknown;
  partial?: string;
  result?: string;
  isError?: boolean;
  skipped?: string;
}

export type RunState = "queued" | "running" | "ok" | "error" | "timeout" | "aborted";

export interface LiveRun {
  runId: string;
  sessionKey: string;
  state: RunState;
  startedAt?: number;
  endedAt?: number;
  model?: string;
  /** the auth profile ("provider:name") the run's model calls use: from a rotation, then the run's end */
  authProfile?: string;
  text: string;
  thinking: string;
  blocks: string[];
  tools: ToolCall[];
  retries: number;
  fallbacks: string[];
  waiting?: string;
  /** the approval the run waits for (its lifecycle says so to every reader, approvers or not) */
  approval?: { id: string; expiresAtMs?: number };
  stopReason?: string;
  error?: string;
  /** the last run seq applied: replays after a reconnect start here, and nothing is applied twice */
  lastSeq: number;
}

type Listener = () => void;

/** The newest live runs kept in memory (older ones are read back from the gateway when asked for). */
const MAX_LIVE_RUNS = 200;

export class ConsoleModel {
  version = 0;
  sessions: SessionInfo[] = [];
  sessionsError: string | undefined;
  /** the model a session without an override uses (sessions.list `defaults`) */
  defaults: SessionListDefaults | undefined;
  readonly runs = new Map<string, LiveRun>();
  /** agents.list and models.list: what the new-session form and the session's model switch offer */
  agents: Array<{ id: string; name?: string }> = [];
  defaultAgentId = "main";
  models: Array<{ ref: string; name: string }> = [];
  /** pending approvals of every kind the gateway has (approvals.ts), oldest first */
  approvals: PendingApproval[] = [];
  /** newest first */
  diagnostics: Diagnostic[] = [];
  diagnosticsEnabled = false;
  /** the gateway's MCP servers (mcp.status); empty when it runs none */
  mcpServers: McpServerHealth[] = [];
  /** sessions whose newest classification said stalled or stuck (cleared by a recovery or when a run of theirs ends) */
  readonly stuck = new Map<string, string>();
  /** bumped per session when its transcript may have changed (a run ended, a reset): the page re-reads it */
  readonly historyVersion = new Map<string, number>();
  private readonly listeners = new Set<Listener>();
  /** runId → live events that arrived while the run's replay was under way */
  private readonly replaying = new Map<string, Array<Record<string, unknown>>>();
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly gw: GatewayClient) {
    gw.onEvent((e) => this.onEvent(e));
    gw.onOpen((reconnect) => void this.onOpen(reconnect));
  }

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  changed(): void {
    this.version++;
    for (const fn of this.listeners) fn();
  }

  has(method: string): boolean {
    return this.gw.methods.includes(method);
  }

  private async onOpen(reconnect: boolean): Promise<void> {
    // From now until its replay is applied, a live run's events wait: the replay holds the older ones, and applying
    // a newer live event first would leave a gap (or put text out of order).
    const replay = reconnect
      ? [...this.runs.values()].filter((r) => r.state === "running" || r.state === "queued").map((r) => r.runId)
      : [];
    if (this.has("agent.events")) for (const id of replay) this.replaying.set(id, []);
    await Promise.all([
      this.refreshSessions(),
      this.refreshApprovals(),
      this.refreshDiagnostics(),
      this.refreshMcp(),
      this.refreshCatalog(),
    ]);
    // runs that were going on before this page opened (or that started while it was away) are read from the start
    for (const s of this.sessions) {
      const id = s.activity?.activeRunId;
      if (id && !this.runs.has(id)) {
        this.applyAgentEvent({ runId: id, sessionKey: s.key });
        replay.push(id);
        if (this.has("agent.events")) this.replaying.set(id, []);
      }
    }
    await this.replayRuns(replay);
    for (const key of this.historyVersion.keys()) this.bumpHistory(key);
    this.changed();
  }

  /** Each run continues from its last seen seq (agent.events, paged), then the live events that waited meanwhile. */
  private async replayRuns(runIds: string[]): Promise<void> {
    if (!this.has("agent.events")) return;
    await Promise.all(
      runIds.map(async (runId) => {
        try {
          let params: Record<string, unknown> = { runId, afterSeq: this.runs.get(runId)?.lastSeq ?? 0 };
          for (;;) {
            const res = await this.gw.call<{ events: Array<Record<string, unknown>>; nextCursor?: string }>(
              "agent.events",
              params,
            );
            for (const e of res.events) this.applyAgentEvent(e);
            if (!res.nextCursor) break;
            params = { runId, cursor: res.nextCursor };
          }
        } catch {
          // the run was pruned or is not visible any more: its record is read with the session
        } finally {
          const waited = this.replaying.get(runId) ?? [];
          this.replaying.delete(runId);
          // in seq order; what the replay already applied is skipped by seq
          waited.sort((a, b) => Number(a.seq) - Number(b.seq));
          for (const e of waited) this.applyAgentEvent(e);
        }
      }),
    );
  }

  async refreshSessions(): Promise<void> {
    try {
      const res = await this.gw.call<SessionsListResult>("sessions.list", { limit: 500 });
      this.sessions = res.sessions;
      this.defaults = res.defaults;
      this.sessionsError = undefined;
    } catch (err) {
      this.sessionsError = (err as Error).message;
    }
    this.changed();
  }

  async refreshApprovals(): Promise<void> {
    if (!this.canApprove()) return;
    const listed: PendingApproval[] = [];
    for (const kind of APPROVAL_KINDS) {
      if (!kind.listMethod || !this.has(kind.listMethod)) continue;
      try {
        const res = await this.gw.call<{ approvals: Array<Record<string, unknown>> }>(kind.listMethod, {});
        for (const raw of res.approvals) {
          const a = pendingOf(kind, raw);
          if (a) listed.push(a);
        }
      } catch (err) {
        if (!(err instanceof RpcError)) throw err;
      }
    }
    this.approvals = listed;
    this.changed();
  }

  /** Answers a pending approval with its kind's resolve method; the list drops it at once. */
  async answerApproval(a: PendingApproval, decision: string): Promise<void> {
    const kind = APPROVAL_KINDS.find((k) => k.kind === a.kind);
    if (!kind) throw new Error(`no way to answer a ${a.kind} approval`);
    await this.gw.call(kind.resolveMethod, { id: a.id, decision });
    this.dropApproval(a.kind, a.id);
  }

  private dropApproval(kind: string, id: unknown): void {
    this.approvals = this.approvals.filter((x) => !(x.kind === kind && x.id === id));
    this.changed();
  }

  async refreshDiagnostics(): Promise<void> {
    if (!this.has("diagnostics.list")) return;
    try {
      const res = await this.gw.call<DiagnosticsListResult>("diagnostics.list", {});
      this.diagnosticsEnabled = res.enabled;
      this.diagnostics = [...res.recent].reverse();
      this.stuck.clear();
      for (const d of res.sessions) this.noteDiagnostic(d);
    } catch {
      // the token lacks read scope: the page is not offered then
    }
    this.changed();
  }

  /** MCP server health: read when the console connects and when the Diagnostics page asks again. */
  async refreshMcp(): Promise<void> {
    if (!this.has("mcp.status")) return;
    try {
      this.mcpServers = (await this.gw.call<McpStatusResult>("mcp.status", {})).servers;
    } catch {
      // the token lacks read scope: the section stays empty
    }
    this.changed();
  }

  /** The agents and models the gateway's config names (read once per connection). */
  async refreshCatalog(): Promise<void> {
    try {
      if (this.has("agents.list")) {
        const res = await this.gw.call<{ defaultId: string; agents: Array<{ id: string; name?: string }> }>(
          "agents.list",
          {},
        );
        this.agents = res.agents;
        this.defaultAgentId = res.defaultId;
      }
      if (this.has("models.list")) {
        const res = await this.gw.call<{ models: Array<{ id: string; name?: string; provider: string }> }>(
          "models.list",
          {},
        );
        this.models = res.models.map((m) => ({ ref: `${m.provider}/${m.id}`, name: m.name ?? m.id }));
      }
    } catch {
      // a token without read scope: the pickers offer the defaults only
    }
    this.changed();
  }

  /** The model a session's runs use: its override, else the configured default (sessions.list `defaults`). */
  modelOf(s: SessionInfo | undefined): string | undefined {
    if (s?.model) return s.model;
    const d = this.defaults;
    if (!d?.model) return undefined;
    return d.modelProvider && !d.model.startsWith(`${d.modelProvider}/`) ? `${d.modelProvider}/${d.model}` : d.model;
  }

  canApprove(): boolean {
    const s = this.gw.scopes;
    return s.includes("operator.admin") || s.includes("operator.approvals");
  }

  /** Sessions change often while runs stream: one re-read per 300 ms at most. */
  private scheduleSessionsRefresh(): void {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refreshSessions();
    }, 300);
  }

  bumpHistory(sessionKey: string): void {
    this.historyVersion.set(sessionKey, (this.historyVersion.get(sessionKey) ?? 0) + 1);
  }

  private onEvent(e: EventFrame): void {
    const p = e.payload ?? {};
    switch (e.event) {
      case "agent": {
        const waiting = this.replaying.get(String(p.runId));
        if (waiting) waiting.push(p);
        else this.applyAgentEvent(p);
        break;
      }
      case "diagnostic":
        this.diagnostics = [p as unknown as Diagnostic, ...this.diagnostics].slice(0, 500);
        this.diagnosticsEnabled = true;
        this.noteDiagnostic(p as unknown as Diagnostic);
        break;
      case "shutdown":
        break;
      default: {
        const requested = APPROVAL_KINDS.find((k) => k.requestedEvent === e.event);
        const resolved = APPROVAL_KINDS.find((k) => k.resolvedEvent === e.event);
        if (requested) {
          const a = pendingOf(requested, p);
          if (!a) return;
          this.approvals = [...this.approvals.filter((x) => !(x.kind === a.kind && x.id === a.id)), a];
        } else if (resolved) {
          this.approvals = this.approvals.filter((x) => !(x.kind === resolved.kind && x.id === p.id));
        } else return;
      }
    }
    this.changed();
  }

  private noteDiagnostic(d: Diagnostic): void {
    if (!d.sessionKey) return;
    if (d.type === "session.stalled" || d.type === "session.stuck") this.stuck.set(d.sessionKey, d.type.slice(8));
    else if (d.type === "session.recovery" && d.phase === "completed") this.stuck.delete(d.sessionKey);
  }

  applyAgentEvent(p: Record<string, unknown>): void {
    const runId = String(p.runId ?? "");
    const sessionKey = String(p.sessionKey ?? "");
    const seq = Number(p.seq ?? 0);
    if (!runId) return;
    let run = this.runs.get(runId);
    if (!run) {
      run = {
        runId,
        sessionKey,
        state: "queued",
        text: "",
        thinking: "",
        blocks: [],
        tools: [],
        retries: 0,
        fallbacks: [],
        lastSeq: 0,
      };
      this.runs.set(runId, run);
      if (this.runs.size > MAX_LIVE_RUNS) this.runs.delete(this.runs.keys().next().value as string);
      this.scheduleSessionsRefresh();
    }
    if (p.stream === undefined) return;
    if (seq && seq <= run.lastSeq) return;
    if (seq) run.lastSeq = seq;
    const data = (p.data ?? {}) as Record<string, unknown>;
    switch (p.stream) {
      case "lifecycle":
        this.applyLifecycle(run, data);
        break;
      case "assistant": {
        const delta = String(data.delta ?? "");
        if (data.replace) run.text = "";
        else if (data.text !== undefined && data.text === delta && run.text) run.text += "\n\n";
        run.text += delta;
        break;
      }
      case "thinking": {
        const delta = String(data.delta ?? "");
        if (data.replace) run.thinking = "";
        run.thinking += delta;
        break;
      }
      case "block":
        if (data.replace) run.blocks = [];
        run.blocks[Number(data.index ?? run.blocks.length)] = String(data.text ?? "");
        break;
      case "tool":
        this.applyTool(run, data);
        break;
      default:
        break;
    }
  }

  private applyLifecycle(run: LiveRun, d: Record<string, unknown>): void {
    switch (d.phase) {
      case "start":
        run.state = "running";
        run.startedAt = Number(d.startedAt ?? Date.now());
        if (typeof d.model === "string") run.model = d.model;
        run.waiting = undefined;
        this.stuck.delete(run.sessionKey);
        this.scheduleSessionsRefresh();
        break;
      case "end":
      case "error":
        run.state = d.phase === "end" ? "ok" : ((d.status as RunState) ?? "error");
        run.endedAt = Number(d.endedAt ?? Date.now());
        run.stopReason = typeof d.stopReason === "string" ? d.stopReason : undefined;
        run.error = typeof d.error === "string" ? d.error : undefined;
        if (typeof d.model === "string") run.model = d.model;
        if (typeof d.authProfile === "string") run.authProfile = d.authProfile;
        run.waiting = undefined;
        run.approval = undefined;
        this.stuck.delete(run.sessionKey);
        this.bumpHistory(run.sessionKey);
        this.scheduleSessionsRefresh();
        break;
      case "retry":
        run.retries++;
        break;
      case "auth_rotate":
        if (typeof d.to === "string") run.authProfile = d.to;
        break;
      case "fallback":
        run.fallbacks.push(`${d.from} → ${d.to}`);
        if (typeof d.to === "string") run.model = d.to;
        break;
      case "waiting":
        run.waiting = d.for === "approval" ? `approval of ${String(d.command ?? "a command")}` : String(d.for);
        run.approval =
          d.for === "approval" && typeof d.approvalId === "string"
            ? { id: d.approvalId, expiresAtMs: typeof d.expiresAtMs === "number" ? d.expiresAtMs : undefined }
            : undefined;
        break;
      case "resumed":
        // the approval ended (answered, expired): the run goes on
        run.waiting = undefined;
        run.approval = undefined;
        break;
      default:
        break;
    }
  }

  private applyTool(run: LiveRun, d: Record<string, unknown>): void {
    const id = String(d.toolCallId ?? "");
    let call = run.tools.find((t) => t.id === id);
    if (!call) {
      call = { id, name: String(d.name ?? "tool"), args: d.args };
      run.tools.push(call);
    }
    if (d.phase === "update") call.partial = String(d.partialResult ?? "");
    if (d.phase === "result") {
      call.result = String(d.result ?? "");
      call.isError = Boolean(d.isError);
      if (typeof d.skipped === "string") call.skipped = d.skipped;
    }
  }

  /** Runs of a session this console watched, oldest first. */
  runsOf(sessionKey: string): LiveRun[] {
    return [...this.runs.values()].filter((r) => r.sessionKey === sessionKey);
  }
}

/** Re-renders the calling component whenever the model changes. */
export function useModel(model: ConsoleModel): number {
  const [, setVersion] = useState(model.version);
  useEffect(() => model.subscribe(() => setVersion(model.version)), [model]);
  return model.version;
}
