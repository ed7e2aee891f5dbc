import { performance } from "node:perf_hooks";
import type { ModelCallMeter } from "../agent/runtime.js";
import type { AgentService } from "../agent/service.js";
import type { ClusterNode } from "../cluster/node.js";
import type { EventBusPort } from "../events/bus-port.js";
import type { LaneScheduler } from "../queue/lanes.js";
import type { Store } from "../storage/types.js";
import { LoopgateMetrics } from "./catalog.js";
import { registerConnectionGauge, registerNodeGauges } from "./gauges.js";
import { modelCallMeter } from "./model-call-meter.js";
import { processMetrics } from "./process-metrics.js";
import { RunMetrics } from "./run-metrics.js";
import { timedStore } from "./timed-store.js";

/** What the node's metrics read once the runtime and service exist. */
export interface NodeMetricsParts {
  service: AgentService;
  lanes: LaneScheduler;
  bus: EventBusPort;
  cluster?: ClusterNode;
  version: string;
}

/**
 * A gateway node's metrics (gateway.metrics.enabled; src/node/ makes it, and only then): the store decorator and the
 * model-call port go in as the node is composed, the bus listener and the gauges once its service exists, and the
 * gateway serves `render()`. Durations are measured on a monotonic clock (`now`, ms), not the wall clock.
 */
export class NodeMetrics {
  readonly metrics = new LoopgateMetrics();
  readonly modelCalls: ModelCallMeter;
  /** the text Prometheus reads, as served: `text/plain; version=0.0.4; charset=utf-8` */
  readonly contentType: string = this.metrics.registry.contentType;
  private runs: RunMetrics | undefined;
  private rendering: Promise<string> | undefined;
  private readonly now: () => number;
  /** the gateway's open connections (none until a gateway serves this node) */
  private connections: () => number = () => 0;

  constructor(opts: { now?: () => number } = {}) {
    this.now = opts.now ?? (() => performance.now());
    this.modelCalls = modelCallMeter(this.metrics, this.now);
  }

  /** The store every call of which is timed by method. */
  timeStore(store: Store): Store {
    const calls = this.metrics.storeCalls;
    return timedStore(
      store,
      (method, s, failed) => calls.observe({ method, outcome: failed ? "error" : "ok" }, s),
      this.now,
    );
  }

  /** Starts hearing the bus and registers the scrape-time gauges. Once. */
  attach(parts: NodeMetricsParts): void {
    if (this.runs) return;
    this.runs = new RunMetrics(this.metrics, (runId) => parts.service.agentOf(runId));
    this.runs.attach(parts.bus);
    registerNodeGauges(this.metrics, parts);
    registerConnectionGauge(this.metrics, () => this.connections());
  }

  /** Where the gateway serving this node counts its open connections (read at scrape time). */
  countConnections(count: () => number): void {
    this.connections = count;
  }

  detach(): void {
    this.runs?.detach();
  }

  /**
   * The exposition text: this node's metrics, then the process's. Scrapes that arrive while one is being rendered
   * share it, so any number of concurrent scrapes costs one render.
   */
  render(): Promise<string> {
    this.rendering ??= (async () => {
      try {
        const [own, process] = await Promise.all([this.metrics.registry.metrics(), processMetrics().metrics()]);
        return `${own}\n${process}`;
      } finally {
        this.rendering = undefined;
      }
    })();
    return this.rendering;
  }
}
