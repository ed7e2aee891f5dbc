import type { EventBusPort } from "../events/bus-port.js";
import type { AgentEvent, LifecycleData } from "../protocol/agent-events.js";
import { type LoopgateMetrics, labelCode } from "./catalog.js";

/** A run between its start and its first streamed text. */
interface Started {
  agent: string;
  startedAt: number;
}

/**
 * Run counters and histograms from the bus's events of the runs this node runs (`subscribeLocal`: on several
 * Postgres nodes each run is counted once, where it ran). Per event the work is one switch on the stream and, for
 * assistant text, one Map lookup; the maps hold only runs between their start and their end.
 */
export class RunMetrics {
  /** runs that started and have not ended: their agent and start time */
  private readonly running = new Map<string, Started>();
  /** the same runs until their first assistant text (then only `running` keeps them) */
  private readonly awaitingFirstToken = new Map<string, Started>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly metrics: LoopgateMetrics,
    /** the agent of a live run (the queue's record of it); undefined once it is gone */
    private readonly agentOf: (runId: string) => string | undefined,
  ) {}

  attach(bus: EventBusPort): void {
    this.unsubscribe ??= bus.subscribeLocal((ev) => this.onEvent(ev));
  }

  detach(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  onEvent(ev: AgentEvent): void {
    switch (ev.stream) {
      case "assistant": {
        const s = this.awaitingFirstToken.get(ev.runId);
        if (s === undefined) return;
        this.awaitingFirstToken.delete(ev.runId);
        this.metrics.timeToFirstToken.observe({ agent: s.agent }, seconds(ev.ts - s.startedAt));
        return;
      }
      case "lifecycle":
        this.onLifecycle(ev.runId, ev.sessionKey, ev.data);
        return;
      case "tool":
        if (ev.data.phase === "result") {
          const d = ev.data;
          this.metrics.toolCalls.inc({ outcome: d.skipped ?? (d.isError ? "error" : "ok") });
        }
        return;
      case "compaction":
        if (ev.data.phase === "end") {
          this.metrics.compactions.inc({ reason: labelCode(ev.data.reason), outcome: labelCode(ev.data.outcome) });
        }
        return;
      default:
        return;
    }
  }

  private onLifecycle(runId: string, sessionKey: string, d: LifecycleData): void {
    switch (d.phase) {
      case "start": {
        const started = { agent: this.agentFor(runId, sessionKey), startedAt: d.startedAt };
        this.running.set(runId, started);
        this.awaitingFirstToken.set(runId, started);
        return;
      }
      case "end":
      case "error": {
        const started = this.running.get(runId);
        this.running.delete(runId);
        this.awaitingFirstToken.delete(runId);
        // a run dropped from its queue never started: its agent is what its session key says
        const agent = started?.agent ?? this.agentFor(runId, sessionKey);
        const status = labelCode(d.status);
        this.metrics.runs.inc({ agent, status });
        const startedAt = started?.startedAt ?? d.startedAt;
        if (startedAt !== undefined) {
          this.metrics.runDuration.observe({ agent, status }, seconds(d.endedAt - startedAt));
        }
        return;
      }
      case "retry":
        this.metrics.retries.inc({ reason: labelCode(d.reason) });
        return;
      case "fallback":
        this.metrics.fallbacks.inc({ reason: labelCode(d.reason) });
        return;
      case "auth_rotate":
        this.metrics.authRotations.inc({ reason: labelCode(d.reason) });
        return;
      default:
        return;
    }
  }

  private agentFor(runId: string, sessionKey: string): string {
    return this.agentOf(runId) ?? agentOfKey(sessionKey);
  }
}

/** `agent:<id>:…` names its agent; a cron, hook or global session key does not. */
function agentOfKey(sessionKey: string): string {
  if (!sessionKey.startsWith("agent:")) return "unknown";
  const end = sessionKey.indexOf(":", 6);
  return labelCode(end > 6 ? sessionKey.slice(6, end) : undefined);
}

const seconds = (ms: number) => Math.max(0, ms) / 1000;
