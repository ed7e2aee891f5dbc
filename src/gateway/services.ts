import type { AgentService } from "../agent/service.js";
import { CronScheduler } from "../cron/scheduler.js";
import { defaultAbortMs } from "../diagnostics/classify.js";
import { DiagnosticsMonitor } from "../diagnostics/monitor.js";
import type { AuditLedger } from "../events/audit-ledger.js";
import { startAuditPruning } from "../events/audit-retention.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { startCostPruning } from "../limits/ledger-retention.js";
import type { LoopgateNode } from "../node/compose.js";
import type { HealthDegraded, HealthResult } from "../protocol/payloads.js";
import { logExecApprovals } from "./approval-log.js";
import type { Broadcaster } from "./broadcast.js";
import { GatewayStartError } from "./errors.js";
import { fireGatewayStart, fireGatewayStop } from "./lifecycle-hooks.js";
import { withMcpHealth } from "./mcp-health.js";
import { RunLog } from "./run-log.js";
import { startRunPruning } from "./run-pruning.js";

/**
 * What a gateway runs beside its sockets: the run log, cron, stuck-session diagnostics, record pruning, the session
 * notices of other nodes, runtime init and recovery. `attach` before the port listens (so nothing a client could
 * cause is missed), `begin` once it listens, `stop` and `detach` in the close sequence.
 */
export interface GatewayServices {
  readonly audit: AuditLedger;
  readonly cron: CronScheduler;
  readonly runLog: RunLog;
  readonly diagnostics?: DiagnosticsMonitor;
  health(startedAt: number, version: string): Promise<HealthResult>;
  /**
   * After the port listens: recovery, then cron (or its leader role), pruning timers, plugins and hooks (loaded in
   * the background; `gateway_start` fires once they are, with the bound port).
   */
  begin(port: number): Promise<void>;
  /** Settles once plugins are loaded and `gateway_start` has fired (or init failed, which is logged). */
  readonly ready: Promise<void>;
  /** First in the close: no job or pruning starts during the drain; resolves once init has settled. */
  stop(): Promise<void>;
  /** After the drain: `gateway_stop`, once, and only if `gateway_start` fired. */
  announceStop(reason: string): Promise<void>;
  /** After the drain: nothing listens to the bus or to other nodes any more. */
  detach(): void;
}

export async function attachGatewayServices(
  node: LoopgateNode,
  broadcaster: Broadcaster,
  clock: Clock,
  logger: Logger,
): Promise<GatewayServices> {
  const { service, runtime: rt } = node;
  const audit = node.audit;
  if (!audit)
    throw new GatewayStartError(`a gateway needs a node with the audit ledger (role "${node.role}" has none)`);
  // gateway nodes on one Postgres: the bus listens before the first client does, session notices cross nodes
  await node.crossNode?.ready();
  const relay = await node.crossNode?.relaySessionNotices({
    events: service.sessionEvents,
    wantsMessages: (key) => broadcaster.followsMessages(key),
    onError: (err) => logger.warn("session notices across nodes", { error: err.message }),
  });
  // run status of other nodes' runs this node does not follow, from their pointers (sessions.changed "status")
  const offRemoteStatus = node.crossNode?.onRemoteRunStatus((key) => broadcaster.remoteRunStatus(key));
  // budgets and token rate limits across nodes: each node announces its calls and runs, and hears the others'
  const spendRelay = rt.spend
    ? await node.crossNode?.relaySpend(rt.spend, (err) =>
        logger.warn("spend notices across nodes", { error: err.message }),
      )
    : undefined;
  const runLog = new RunLog(logger, service);
  runLog.attach(rt.bus);
  // several nodes: a job stored on any node reaches the cron leader at once
  let cronNotices: { announce(): void; close(): void } | undefined;
  const cron = new CronScheduler({
    service,
    config: rt.config.cron,
    clock,
    logger,
    onStoredChange: () => cronNotices?.announce(),
  });
  cronNotices = await node.crossNode?.relayCronChanges(
    () =>
      void cron
        .reloadStored()
        .catch((err: Error) =>
          logger.warn("cron: re-reading jobs another node changed failed", { error: err.message }),
        ),
    (err) => logger.warn("cron notices across nodes", { error: err.message }),
  );
  let diagnostics = startDiagnostics(service, clock, logger, broadcaster);
  // a reloaded config (SPEC 26): cron's jobs and settings apply from now, the stuck-session monitor restarts with
  // its new thresholds (or stops, or starts)
  const stopLiveConfig = node.live.onApply("cron and diagnostics", (next, _prev, applied) => {
    if (applied.some((p) => p.startsWith("cron."))) cron.reconfigure(next.cron);
    if (applied.some((p) => p.startsWith("diagnostics."))) {
      diagnostics?.stop();
      diagnostics = startDiagnostics(service, clock, logger, broadcaster);
    }
  });
  const stopApprovalLog = logExecApprovals(rt.execApprovals, logger);
  let timers: Array<{ stop(): void }> = [];
  let initializing: Promise<void> = Promise.resolve();
  let started = false;
  let stopAnnounced = false;
  return {
    audit,
    cron,
    runLog,
    get diagnostics() {
      return diagnostics;
    },
    health: (startedAt, version) =>
      healthOf(
        service,
        { audit, cron, diagnostics, cluster: node.cluster, clock },
        { uptimeMs: clock.now() - startedAt, version },
      ),
    get ready() {
      return initializing;
    },
    async begin(port) {
      await recover(service, runLog, logger);
      // after recovery: the previous process's queued inputs are back in the queue before a missed job is caught up
      // several nodes: one of them runs the cron jobs (whoever holds the cron lease), else each would fire every job
      const leader = node.cluster;
      if (leader) {
        leader.lead("cron", { gain: () => cron.start(), lose: () => cron.stop() });
        void leader.tick();
      } else await cron.start();
      timers = [
        startRunPruning({ store: rt.store, limits: rt.config.session.runResults, clock, logger }),
        startAuditPruning({ store: rt.store, limits: rt.config.audit, clock, logger }),
        ...(rt.spend ? [startCostPruning({ store: rt.store, ledger: rt.config.limits.ledger, clock, logger })] : []),
      ];
      // Plugins and internal hooks load in the background: the port answers at once, the first run awaits init().
      initializing = rt
        .init()
        .then(async () => {
          started = true;
          await fireGatewayStart(rt, port);
        })
        .catch((err) => logger.error("runtime init failed", { error: (err as Error)?.message ?? String(err) }));
    },
    async stop() {
      for (const t of timers) t.stop();
      cron.stop();
      // a gateway closed right after it started may still be seeding its workspace or loading plugins: once close
      // resolves, nothing of it is left writing into the state dir (which its owner may then remove)
      await initializing;
    },
    async announceStop(reason) {
      if (!started || stopAnnounced) return;
      stopAnnounced = true;
      await fireGatewayStop(rt, reason).catch((err) =>
        logger.error("gateway_stop hooks failed", { error: (err as Error)?.message ?? String(err) }),
      );
    },
    detach() {
      stopLiveConfig();
      diagnostics?.stop();
      relay?.close();
      offRemoteStatus?.();
      cronNotices?.close();
      spendRelay?.close();
      runLog.detach();
      stopApprovalLog();
    },
  };
}

/** `health`: the store's fault state, counts, the audit ledger's and cron's state, stuck sessions, MCP servers. */
async function healthOf(
  service: AgentService,
  parts: {
    audit: AuditLedger;
    cron: CronScheduler;
    diagnostics: DiagnosticsMonitor | undefined;
    /** a Postgres node's membership: its heartbeat says whether the store answers and its leases hold */
    cluster: Pick<NonNullable<LoopgateNode["cluster"]>, "degraded"> | undefined;
    clock: Clock;
  },
  about: { uptimeMs: number; version: string },
): Promise<HealthResult> {
  let degraded: HealthDegraded | undefined = service.sessions.storageFault() ?? parts.cluster?.degraded();
  let sessions: number | undefined;
  try {
    // a node whose heartbeat already fails does not wait for the store's connect timeout to say so
    if (degraded?.reason !== "store unreachable" && degraded?.reason !== "leases lost")
      sessions = await service.sessions.count();
  } catch (err) {
    // SQLite's count does not fail; a Postgres store that does not answer is this node's health, not an error
    if (!parts.cluster) throw err;
    degraded ??= {
      reason: "store unreachable",
      message: `reading the store failed: ${(err as Error)?.message ?? String(err)}`,
      since: parts.clock.now(),
    };
  }
  // a configured MCP server that failed degrades health, naming it (mcp-health.ts)
  return withMcpHealth(
    {
      ok: !degraded,
      ...(degraded ? { degraded } : {}),
      version: about.version,
      uptimeMs: about.uptimeMs,
      activeRuns: service.activeRunCount,
      ...(sessions !== undefined ? { sessions } : {}),
      audit: parts.audit.state(),
      ...(parts.cron.enabled ? { cron: await parts.cron.health() } : {}),
      queueDepth: service.queueDepth,
      stuckSessions: parts.diagnostics?.stuckSessionCount ?? 0,
    },
    service.rt.mcpStatus,
  );
}

/** What a previous process left: active runs are recorded as failed, queued inputs run again. */
async function recover(service: AgentService, runLog: RunLog, logger: Logger): Promise<void> {
  const { failed, requeued } = await service.recover();
  if (failed.length || requeued.length) {
    logger.warn("recovered runs of a previous process", { failed: failed.length, requeued: requeued.length });
  }
  for (const runId of requeued) {
    const run = await service.sessions.run(runId);
    if (run) runLog.follow(runId, run.sessionKey);
  }
}

/** The stuck-session monitor when `diagnostics.enabled` (SPEC 13); off, nothing subscribes and no timer runs. */
function startDiagnostics(
  service: AgentService,
  clock: Clock,
  logger: Logger,
  broadcaster: Broadcaster,
): DiagnosticsMonitor | undefined {
  const cfg = service.rt.config.diagnostics;
  if (!cfg.enabled) return undefined;
  const monitor = new DiagnosticsMonitor({
    queue: service,
    clock,
    logger,
    warnMs: cfg.stuckSessionWarnMs,
    abortMs: cfg.stuckSessionAbortMs ?? defaultAbortMs(cfg.stuckSessionWarnMs),
    onDiagnostic: (d) => broadcaster.sendDiagnostic(d),
  });
  monitor.start(service.rt.bus, service.rt);
  return monitor;
}
