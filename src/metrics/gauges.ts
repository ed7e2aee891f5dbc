import type { AgentService } from "../agent/service.js";
import type { ClusterNode } from "../cluster/node.js";
import type { LaneScheduler } from "../queue/lanes.js";
import { CRON_LANE } from "../queue/types.js";
import type { LoopgateMetrics } from "./catalog.js";

/** What the scrape-time gauges read: the node's queue and lanes, and its cluster member on Postgres. */
export interface NodeGaugeSources {
  service: AgentService;
  lanes: LaneScheduler;
  /** a Postgres node's cluster member; absent on SQLite (one node, no leases), and then no lease gauge exists */
  cluster?: ClusterNode;
  /** this node's version, for loopgate_build_info */
  version: string;
}

/**
 * The lane a gauge names: every session lane is one series ("session", summed), the default and cron lanes their
 * own, and any other lane a request named ("lane" is the client's to choose) is "other", so no client can add series.
 */
export function laneKind(lane: string): string {
  if (lane.startsWith("session:")) return "session";
  if (lane === "main" || lane === CRON_LANE) return lane;
  return "other";
}

/** The node's gauges, each read once per scrape (nothing is updated per event). */
export function registerNodeGauges(metrics: LoopgateMetrics, src: NodeGaugeSources): void {
  metrics.gauge("loopgate_build_info", "Always 1; the version of this gateway", ["version"], (g) =>
    g.set({ version: src.version }, 1),
  );
  metrics.gauge("loopgate_active_runs", "Sessions running a turn now on this node", [], (g) =>
    g.set(src.service.activeRunCount),
  );
  metrics.gauge("loopgate_active_sessions", "Sessions with a running or queued turn on this node", [], (g) =>
    g.set(src.service.busySessionCount),
  );
  metrics.gauge("loopgate_queued_inputs", "Accepted messages waiting for their session's turn on this node", [], (g) =>
    g.set(src.service.queueDepth),
  );
  const byLane = (pick: "queued" | "active") => (g: { reset(): void; set(l: { lane: string }, v: number): void }) => {
    const sums = new Map<string, number>([
      ["session", 0],
      ["main", 0],
    ]);
    src.lanes.forEachLane((name, snap) => {
      const kind = laneKind(name);
      sums.set(kind, (sums.get(kind) ?? 0) + snap[pick]);
    });
    g.reset();
    for (const [lane, n] of sums) g.set({ lane }, n);
  };
  metrics.gauge(
    "loopgate_lane_queued_runs",
    "Runs waiting for a lane slot, by lane (every session lane summed as lane=session; lanes a request named other than main and cron as other)",
    ["lane"],
    byLane("queued"),
  );
  metrics.gauge(
    "loopgate_lane_active_runs",
    "Runs holding a lane slot, by lane (as loopgate_lane_queued_runs)",
    ["lane"],
    byLane("active"),
  );
  const cluster = src.cluster;
  if (cluster) {
    metrics.gauge(
      "loopgate_cluster_leases_held",
      "Leases this Postgres node holds, by kind: session (a session it runs) or role (a leader role such as cron)",
      ["kind"],
      (g) => {
        const held = cluster.leasesHeld();
        g.set({ kind: "session" }, held.sessions);
        g.set({ kind: "role" }, held.roles);
      },
    );
  }
}

/** The gateway's own gauge: WebSocket connections open now (handshaking or ready). */
export function registerConnectionGauge(metrics: LoopgateMetrics, count: () => number): void {
  metrics.gauge("loopgate_connected_clients", "WebSocket connections open now (handshaking or ready)", [], (g) =>
    g.set(count()),
  );
}
