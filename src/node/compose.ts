import type { ExecPrompt } from "../agent/exec-approvals.js";
import { AgentRuntime, type RuntimeOptions } from "../agent/runtime.js";
import { AgentService } from "../agent/service.js";
import type { ClusterNode } from "../cluster/node.js";
import { defaultAgentId } from "../config/agents.js";
import type { LoopgateConfig } from "../config/schema.js";
import { AuditLedger } from "../events/audit-ledger.js";
import type { EventBusPort } from "../events/bus-port.js";
import { type Clock, systemClock } from "../infra/clock.js";
import { AgentEventBus } from "../infra/events.js";
import { createLogger, type Logger } from "../infra/logger.js";
import type { SessionEvents } from "../infra/session-events.js";
import { SpendControl } from "../limits/spend-control.js";
import type { NodeMetrics } from "../metrics/node-metrics.js";
import { agentWorkspaceDir } from "../prompt/workspace.js";
import { loopgateVersion } from "../protocol/version.js";
import type { ModelProvider } from "../providers/types.js";
import { FileSessionLock } from "../session/file-lock.js";
import type { SessionLockPort } from "../session/lock-port.js";
import type { PostgresStore } from "../storage/postgres/store.js";
import type { RunEndNotice, Store } from "../storage/types.js";
import type { ExecSecurity } from "../tools/exec-policy.js";
import type { McpToolSource } from "../tools/mcp/source.js";
import { liveMcpRuntimeOptions, type McpSlot } from "../tools/mcp/tool-source.js";
import { type Sandboxes, startSandboxes } from "../tools/sandbox/start.js";
import type { Tool } from "../tools/types.js";
import { type Backend, openBackend } from "./backend.js";
import { LiveConfig } from "./live-config.js";

/**
 * What the process is. Every role gets the same parts for its backend; the role decides what is refused
 * (`embedded` on Postgres) and what is added (the audit ledger for the roles users run turns in: gateway,
 * embedded). `command` is a short CLI command that runs no turn (`plugins install`: hooks and workspaces only).
 */
export type NodeRole = "gateway" | "embedded" | "command" | "test" | "bench";

export interface ComposeNodeOptions {
  role: NodeRole;
  config: LoopgateConfig;
  stateDir: string;
  /**
   * An already-open backend (test harnesses and the bench that time the SQLite engine directly); the node owns it
   * and closes it like one it opened. Default: `openBackend` from `storage.backend`.
   */
  backend?: Backend;
  /** Provider instances by provider id; they win over config (tests, embedding apps). */
  providers?: Record<string, ModelProvider>;
  /** Extra tools beside the built-ins. */
  tools?: Tool[];
  clock?: Clock;
  logger?: Logger;
  env?: NodeJS.ProcessEnv;
  newId?: () => string;
  /** tools.exec.security when the config does not set it. Default "allowlist"; the CLI's own runs pass "full". */
  execSecurityDefault?: ExecSecurity;
  /** Exec approvals are asked here (the CLI's terminal) instead of waiting for a gateway operator. */
  execPrompt?: ExecPrompt;
}

/** `composeSqliteNode`'s options: a store already open, and (tests that watch locking) a wrapped lock port. */
export type SqliteNodeOptions = Omit<ComposeNodeOptions, "backend"> & { store: Store; sessionLocks?: SessionLockPort };

/**
 * What only gateway nodes on one Postgres have: hearing other nodes. Offered as a capability so the gateway never
 * asks what the bus or the store is.
 */
export interface CrossNode {
  /** Resolves once this node's LISTEN connection is up: a node must not serve deaf. */
  ready(): Promise<void>;
  /** Relays `sessions.changed` and `session.message` notices between the nodes; closed by the caller. */
  relaySessionNotices(opts: {
    events: SessionEvents;
    wantsMessages: (sessionKey: string) => boolean;
    onError: (err: Error) => void;
  }): Promise<{ close(): void }>;
  /** Relays spend notices (calls, token runs) between the nodes, for budgets and rate limits; closed by the caller. */
  relaySpend(spend: SpendControl, onError: (err: Error) => void): Promise<{ close(): void }>;
  /**
   * Hears that a run of another node started or ended in a session, from its pointers alone (nothing read): for
   * `sessions.changed` "status" to clients that follow every session but none of its runs. Returns the unsubscribe.
   */
  onRemoteRunStatus(listener: (sessionKey: string) => void): () => void;
  /** Tells the other nodes when this node's stored cron jobs change, and calls `onChange` when theirs do. */
  relayCronChanges(onChange: () => void, onError: (err: Error) => void): Promise<{ announce(): void; close(): void }>;
}

export interface LoopgateNode {
  readonly role: NodeRole;
  readonly backend: Backend;
  readonly store: Store;
  readonly runtime: AgentRuntime;
  readonly service: AgentService;
  /** the lease-holding member of the cluster: a node on Postgres, else undefined (SQLite is one node) */
  readonly cluster?: ClusterNode;
  /** other nodes' runs and session notices: a node on Postgres, else undefined */
  readonly crossNode?: CrossNode;
  /** the audit ledger's writer (gateway and embedded roles): attached to the bus, closed with the node */
  readonly audit?: AuditLedger;
  /** the MCP servers of `mcp.servers` (gateway and embedded roles, when any are configured); closed with the node */
  readonly mcp?: McpToolSource;
  /**
   * The config as it is now, and the one place a new one is applied (SPEC 26: the gateway's reload and config.patch):
   * the runtime, the MCP servers and the gateway's services take it for the next run.
   */
  readonly live: LiveConfig;
  /** spend control (gateway and embedded roles): budgets before every model call, the cost ledger; flushed on close */
  readonly spend?: SpendControl;
  /** what /metrics serves (a gateway with gateway.metrics.enabled; src/metrics/); absent, nothing is measured */
  readonly metrics?: NodeMetrics;
  /** Whether a store error may well pass if the request is repeated (the server restarting): never on SQLite. */
  isTransientStoreError(err: unknown): boolean;
  /** Joins the cluster (beat, pointers) on Postgres; nothing else starts here. Idempotent. */
  start(): Promise<void>;
  /**
   * After the process stopped its runs: the audit ledger and the run-event writer write what they hold, the bus
   * stops following other nodes, the cluster member stops beating, the store closes. Once; idempotent.
   */
  close(): Promise<void>;
}

/** A role that may not run on the configured backend, said so before anything is opened or written. */
export class NodeRoleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NodeRoleError";
  }
}

/** The parts that differ by backend, before the runtime exists. */
interface BackendParts {
  bus: EventBusPort;
  sessionLocks: SessionLockPort;
  cluster?: ClusterNode;
  crossNode?: CrossNode;
  isTransientStoreError: (err: unknown) => boolean;
  closeBus(): void;
}

/**
 * The composition root: from config and role, once, the store, event bus, session locks, cluster membership and
 * transient-error rule a process uses, the runtime and service over them, and the start and close order.
 */
export async function composeNode(opts: ComposeNodeOptions): Promise<LoopgateNode> {
  const { config, role } = opts;
  if (role === "embedded" && (opts.backend?.kind ?? config.storage.backend) === "postgres") {
    throw new NodeRoleError(
      'this config uses storage.backend "postgres" (a gateway fleet); an embedded run would write to the fleet\'s sessions without a lease. Send the message through a gateway (loopgate agent without --local), or use a SQLite state dir.',
    );
  }
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger();
  const env = opts.env ?? process.env;
  // a sandbox backend that cannot run here is a load-time error, before the store is opened (other roles' runtimes
  // make unchecked ones: tests and benches build what they measure)
  const sandboxes =
    role === "gateway" || role === "embedded" ? await startSandboxes({ ...opts, env, clock, logger }) : undefined;
  const backend =
    opts.backend ?? (await openBackend(config, opts.stateDir, { owner: role === "gateway", env, logger }));
  // MCP servers for the roles that run turns users see: the gateway connects them in the background (a slow server
  // never delays health); the embedded CLI's one run waits until each has connected or failed
  // a slot, not the source: a reloaded config may start the first server of a process that had none
  const mcp: McpSlot | undefined = role === "gateway" || role === "embedded" ? { current: undefined } : undefined;
  // the bus's end notice waits for the writer the runtime owns: bound once the runtime exists
  let node: LoopgateNode | undefined;
  try {
    if (mcp) mcp.current = await startConfiguredMcp(config, { logger, env, settle: role === "embedded" });
    // a gateway's metrics (read once at start, like every gateway key): prom-client is loaded only when they are on
    const metrics =
      role === "gateway" && config.gateway.metrics.enabled
        ? new (await import("../metrics/node-metrics.js")).NodeMetrics()
        : undefined;
    if (backend.kind === "sqlite") {
      node = assemble(
        { ...opts, sandboxes, metrics },
        backend,
        sqliteParts(opts.stateDir, config, clock, logger, env),
        mcp,
      );
      return node;
    }
    if (role === "gateway") await warnOfLocalWorkspace(config, opts.stateDir, logger);
    // a run's end notice waits for its events to be written at the writer's pace (a flush per end cost a commit)
    const eventsWritten = () => node?.runtime.runEvents.written() ?? Promise.resolve();
    // ... and rides the writer's batch that stores them (no commit of its own)
    const rideEndNotice = (end: RunEndNotice) =>
      node ? node.runtime.runEvents.announceEnd(end) : Promise.reject(new Error("no node yet"));
    node = assemble(
      { ...opts, sandboxes, metrics },
      backend,
      await postgresParts(backend.store, config, clock, logger, eventsWritten, rideEndNotice),
      mcp,
    );
    return node;
  } catch (err) {
    await mcp?.current?.close();
    await backend.store.close();
    throw err;
  }
}

/**
 * `composeNode` for a SQLite store the caller already opened, without a turn of the event loop: the test harnesses
 * that build their node synchronously. The node closes the store.
 */
export function composeSqliteNode(opts: SqliteNodeOptions): LoopgateNode {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? createLogger();
  const parts = sqliteParts(opts.stateDir, opts.config, clock, logger, opts.env ?? process.env);
  if (opts.sessionLocks) parts.sessionLocks = opts.sessionLocks;
  return assemble(opts, { kind: "sqlite", store: opts.store }, parts);
}

/** The runtime and service over the backend's parts, the audit ledger by role, and the start and close order. */
function assemble(
  opts: Omit<ComposeNodeOptions, "backend"> & { sandboxes?: Sandboxes; metrics?: NodeMetrics },
  backend: Backend,
  parts: BackendParts,
  mcp?: McpSlot,
): LoopgateNode {
  const { config, role, metrics } = opts;
  const logger = opts.logger ?? createLogger();
  // with metrics on, every store call of the node's parts is timed; off, they call the store itself
  const store = metrics ? metrics.timeStore(backend.store) : backend.store;
  // the roles users run turns in meter their model calls (budgets, run caps, the cost ledger)
  const spend =
    role === "gateway" || role === "embedded"
      ? new SpendControl({
          config: config.limits,
          store,
          clock: opts.clock ?? systemClock,
          logger,
          bus: parts.bus,
        })
      : undefined;
  // the MCP source reads the config as it is now; the runtime's constructor already asks it (a tool name clash)
  let built: AgentRuntime | undefined;
  const rt: AgentRuntime = new AgentRuntime({
    spend,
    config,
    stateDir: opts.stateDir,
    store,
    bus: parts.bus,
    sessionLocks: parts.sessionLocks,
    isTransientStoreError: parts.isTransientStoreError,
    clock: opts.clock,
    logger,
    env: opts.env,
    providers: opts.providers,
    tools: opts.tools,
    newId: opts.newId,
    execSecurityDefault: opts.execSecurityDefault,
    execPrompt: opts.execPrompt,
    // MCP tools reach a run only through its profile (agent/profile/), as one more tool source
    ...(mcp ? liveMcpRuntimeOptions(mcp, () => built?.config ?? config) : {}),
    sandboxes: opts.sandboxes,
    ...(metrics ? { modelCallMeter: metrics.modelCalls } : {}),
  });
  built = rt;
  const live = liveConfigOf(rt, mcp, opts.env ?? process.env);
  const service = new AgentService(rt);
  if (parts.cluster) service.attachCluster(parts.cluster);
  metrics?.attach({
    service,
    lanes: rt.lanes,
    bus: parts.bus,
    ...(parts.cluster ? { cluster: parts.cluster } : {}),
    version: loopgateVersion(),
  });
  let audit: AuditLedger | undefined;
  if (role === "gateway" || role === "embedded") {
    // attached before the gateway recovers, so runs a previous process left are recorded as they are failed
    audit = new AuditLedger({
      store,
      clock: rt.clock,
      logger: rt.logger,
      queueSize: config.audit.queueSize,
      actorOf: (runId) => service.originOf(runId)?.actor,
    });
    audit.attach(rt.bus);
    // the audit and cost rows ride the run-event batches: one commit for the three ledgers instead of three
    rt.runEvents.carry(audit.rider());
  }
  if (spend) rt.runEvents.carry(spend.ledger.rider());
  let starting: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  return {
    role,
    backend,
    store,
    runtime: rt,
    service,
    ...(parts.cluster ? { cluster: parts.cluster } : {}),
    ...(parts.crossNode ? { crossNode: parts.crossNode } : {}),
    ...(audit ? { audit } : {}),
    get mcp() {
      return mcp?.current;
    },
    live,
    ...(spend ? { spend } : {}),
    ...(metrics ? { metrics } : {}),
    isTransientStoreError: parts.isTransientStoreError,
    start() {
      starting ??= parts.cluster ? parts.cluster.start() : Promise.resolve();
      return starting;
    },
    close() {
      closing ??= (async () => {
        metrics?.detach();
        // every run has ended (drained, or aborted and recorded): their last rows are written before the store closes
        await audit?.close();
        await rt.close();
        await spend?.ledger.flush();
        // every MCP child has exited once this resolves
        await mcp?.current?.close();
        parts.closeBus();
        // a node that is closing stops beating; a drained one already handed its sessions off (AgentService.drain)
        if (starting) await parts.cluster?.stopBeating();
        await backend.store.close();
      })();
      return closing;
    },
  };
}

/**
 * The node's live config: the runtime takes a new one first (the next run's profile), then the MCP servers (a
 * changed server reconnects, a new one connects, a removed one closes; the first one starts the source).
 */
function liveConfigOf(rt: AgentRuntime, mcp: McpSlot | undefined, env: NodeJS.ProcessEnv): LiveConfig {
  const live = new LiveConfig(rt.config, rt.logger);
  live.onApply("the runtime", (next, _prev, applied) => rt.applyConfig(next, applied));
  if (mcp) {
    live.onApply("the MCP servers", async (next, _prev, applied) => {
      if (!applied.some((p) => p.startsWith("mcp."))) return;
      if (mcp.current) {
        const touched = await mcp.current.reconfigure(next.mcp.servers);
        if (touched.length > 0) rt.logger.info("mcp servers reconfigured", { servers: touched.join(", ") });
      } else mcp.current = await startConfiguredMcp(next, { logger: rt.logger, env });
    });
  }
  return live;
}

/**
 * `startMcp` (tools/mcp/start.ts), its module loaded only when mcp.servers names a server: a one-shot CLI run
 * without MCP servers does not load it.
 */
async function startConfiguredMcp(
  config: LoopgateConfig,
  opts: Parameters<typeof import("../tools/mcp/start.js").startMcp>[1],
): Promise<McpToolSource | undefined> {
  if (Object.keys(config.mcp.servers).length === 0) return undefined;
  const { startMcp } = await import("../tools/mcp/start.js");
  return startMcp(config, opts);
}

/** One process on one file: the in-process bus, the file write lock (SPEC 3); no store error is worth a retry. */
export function sqliteParts(
  stateDir: string,
  config: LoopgateConfig,
  clock: Clock,
  logger: Logger,
  env: NodeJS.ProcessEnv,
): BackendParts {
  return {
    bus: new AgentEventBus({ now: () => clock.now() }),
    sessionLocks: new FileSessionLock({
      stateDir,
      acquireTimeoutMs: config.session.writeLock.acquireTimeoutMs,
      env,
      warn: (m) => logger.warn(m),
    }),
    isTransientStoreError: () => false,
    closeBus() {},
  };
}

/**
 * Several nodes on one Postgres: the bus also hears other nodes' runs (events/pg-bus.ts), sessions are owned by
 * lease with fenced writes (src/cluster/), and a connection lost or a server restarting is worth a retry.
 */
async function postgresParts(
  store: PostgresStore,
  config: LoopgateConfig,
  clock: Clock,
  logger: Logger,
  eventsWritten: () => Promise<unknown>,
  rideEndNotice: (end: RunEndNotice) => Promise<void>,
): Promise<BackendParts> {
  // loaded only here: a SQLite process never loads the cluster layer, the Postgres bus or its relays
  const [{ clusterNodeFor }, { PgEventBus }, { PgSessionRelay }, { PgSpendRelay }, { isTransientPostgresError }] =
    await Promise.all([
      import("../cluster/wire.js"),
      import("../events/pg-bus.js"),
      import("../events/pg-session-relay.js"),
      import("../limits/spend-relay.js"),
      import("../storage/postgres/transient-errors.js"),
    ]);
  const cluster = clusterNodeFor(store, config, logger);
  const bus = new PgEventBus({
    source: store,
    store,
    now: () => clock.now(),
    // a run's end is announced to the other nodes once its events are written
    beforeEndNotice: eventsWritten,
    rideEndNotice,
    onError: (err) => logger.warn("event bus: reading another node's events failed", { error: err.message }),
  });
  return {
    bus,
    sessionLocks: cluster.locks,
    cluster,
    crossNode: {
      ready: () => bus.ready(),
      relaySessionNotices: (o) => PgSessionRelay.start({ source: store, store, messagePointers: store, ...o }),
      relaySpend: (spend, onError) => PgSpendRelay.start(store, spend, onError, store),
      onRemoteRunStatus: (listener) => bus.onRemoteRunStatus(listener),
      relayCronChanges: async (onChange, onError) => {
        const { CronNotices } = await import("../cluster/cron-notices.js");
        return CronNotices.start(store, onChange, onError);
      },
    },
    isTransientStoreError: isTransientPostgresError,
    closeBus: () => bus.close(),
  };
}

/** A gateway node on Postgres whose workspace is this machine's disk, with no layout declared: said once at start. */
async function warnOfLocalWorkspace(config: LoopgateConfig, stateDir: string, logger: Logger): Promise<void> {
  // loaded only here, like the rest of the cluster layer
  const { workspaceLayoutWarning } = await import("../cluster/workspace-layout.js");
  const dir = agentWorkspaceDir(config, stateDir, defaultAgentId(config));
  const warning = workspaceLayoutWarning(config.cluster.workspace, dir);
  if (warning) logger.warn(`cluster: ${warning}`);
}

/**
 * A runtime over a SQLite store with the bus and session locks `composeNode` gives SQLite: for unit tests that build
 * the runtime itself (and close their own store).
 */
export function sqliteRuntime(
  opts: Omit<RuntimeOptions, "bus" | "sessionLocks" | "isTransientStoreError">,
): AgentRuntime {
  const parts = sqliteParts(
    opts.stateDir,
    opts.config,
    opts.clock ?? systemClock,
    opts.logger ?? createLogger(),
    opts.env ?? process.env,
  );
  return new AgentRuntime({
    ...opts,
    bus: parts.bus,
    sessionLocks: parts.sessionLocks,
    isTransientStoreError: parts.isTransientStoreError,
  });
}
