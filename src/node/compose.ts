import type { ExecPrompt } from "../agent/exec-approvals.js";
import { AgentRuntime, type RuntimeOptions } from "../agent/runtime.js";
import { AgentService } from "../agent/service.js";
import type { ClusterNode } from "../cluster/node.js";
import type { LoopgateConfig } from "../config/schema.js";
import { AuditLedger } from "../events/audit-ledger.js";
import type { EventBusPort } from "../events/bus-port.js";
import { PgEventBus } from "../events/pg-bus.js";
import { PgSessionRelay } from "../events/pg-session-relay.js";
import { type Clock, systemClock } from "../infra/clock.js";
import { AgentEventBus } from "../infra/events.js";
import { createLogger, type Logger } from "../infra/logger.js";
import type { SessionEvents } from "../infra/session-events.js";
import { SpendControl } from "../limits/spend-control.js";
import { PgSpendRelay } from "../limits/spend-relay.js";
import type { ModelProvider } from "../providers/types.js";
import { FileSessionLock } from "../session/file-lock.js";
import type { SessionLockPort } from "../session/lock-port.js";
import type { PostgresStore } from "../storage/postgres/store.js";
import { isTransientPostgresError } from "../storage/postgres/transient-errors.js";
import type { Store } from "../storage/types.js";
import type { ExecSecurity } from "../tools/exec-policy.js";
import type { McpToolSource } from "../tools/mcp/source.js";
import { startMcp } from "../tools/mcp/start.js";
import { mcpRuntimeOptions } from "../tools/mcp/tool-source.js";
import { type Sandboxes, startSandboxes } from "../tools/sandbox/start.js";
import type { Tool } from "../tools/types.js";
import { type Backend, openBackend } from "./backend.js";

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
  /** spend control (gateway and embedded roles): budgets before every model call, the cost ledger; flushed on close */
  readonly spend?: SpendControl;
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
  let mcp: McpToolSource | undefined;
  // the bus's end notice waits for the writer the runtime owns: bound once the runtime exists
  let node: LoopgateNode | undefined;
  try {
    if (role === "gateway" || role === "embedded") {
      mcp = await startMcp(config, { logger, env, settle: role === "embedded" });
    }
    if (backend.kind === "sqlite") {
      node = assemble({ ...opts, sandboxes }, backend, sqliteParts(opts.stateDir, config, clock, logger, env), mcp);
      return node;
    }
    const flushEvents = () => node?.runtime.runEvents.flush() ?? Promise.resolve();
    node = assemble(
      { ...opts, sandboxes },
      backend,
      await postgresParts(backend.store, config, clock, logger, flushEvents),
      mcp,
    );
    return node;
  } catch (err) {
    await mcp?.close();
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
  opts: Omit<ComposeNodeOptions, "backend"> & { sandboxes?: Sandboxes },
  backend: Backend,
  parts: BackendParts,
  mcp?: McpToolSource,
): LoopgateNode {
  const { config, role } = opts;
  const logger = opts.logger ?? createLogger();
  // the roles users run turns in meter their model calls (budgets, run caps, the cost ledger)
  const spend =
    role === "gateway" || role === "embedded"
      ? new SpendControl({
          config: config.limits,
          store: backend.store,
          clock: opts.clock ?? systemClock,
          logger,
          bus: parts.bus,
        })
      : undefined;
  const rt = new AgentRuntime({
    spend,
    config,
    stateDir: opts.stateDir,
    store: backend.store,
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
    ...mcpRuntimeOptions(mcp, config),
    sandboxes: opts.sandboxes,
  });
  const service = new AgentService(rt);
  if (parts.cluster) service.attachCluster(parts.cluster);
  let audit: AuditLedger | undefined;
  if (role === "gateway" || role === "embedded") {
    // attached before the gateway recovers, so runs a previous process left are recorded as they are failed
    audit = new AuditLedger({
      store: backend.store,
      clock: rt.clock,
      logger: rt.logger,
      queueSize: config.audit.queueSize,
      actorOf: (runId) => service.originOf(runId)?.actor,
    });
    audit.attach(rt.bus);
  }
  let starting: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  return {
    role,
    backend,
    store: backend.store,
    runtime: rt,
    service,
    ...(parts.cluster ? { cluster: parts.cluster } : {}),
    ...(parts.crossNode ? { crossNode: parts.crossNode } : {}),
    ...(audit ? { audit } : {}),
    ...(mcp ? { mcp } : {}),
    ...(spend ? { spend } : {}),
    isTransientStoreError: parts.isTransientStoreError,
    start() {
      starting ??= parts.cluster ? parts.cluster.start() : Promise.resolve();
      return starting;
    },
    close() {
      closing ??= (async () => {
        // every run has ended (drained, or aborted and recorded): their last rows are written before the store closes
        await audit?.close();
        await rt.close();
        await spend?.ledger.flush();
        // every MCP child has exited once this resolves
        await mcp?.close();
        parts.closeBus();
        // a node that is closing stops beating; a drained one already handed its sessions off (AgentService.drain)
        if (starting) await parts.cluster?.stopBeating();
        await backend.store.close();
      })();
      return closing;
    },
  };
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
  flushEvents: () => Promise<unknown>,
): Promise<BackendParts> {
  // loaded only here: a SQLite process never loads the cluster layer
  const { clusterNodeFor } = await import("../cluster/wire.js");
  const cluster = clusterNodeFor(store, config, logger);
  const bus = new PgEventBus({
    source: store,
    store,
    now: () => clock.now(),
    // a run's end is announced to the other nodes once its events are written
    beforeEndNotice: flushEvents,
    onError: (err) => logger.warn("event bus: reading another node's events failed", { error: err.message }),
  });
  return {
    bus,
    sessionLocks: cluster.locks,
    cluster,
    crossNode: {
      ready: () => bus.ready(),
      relaySessionNotices: (o) => PgSessionRelay.start({ source: store, store, messagePointers: store, ...o }),
      relaySpend: (spend, onError) => PgSpendRelay.start(store, spend, onError),
    },
    isTransientStoreError: isTransientPostgresError,
    closeBus: () => bus.close(),
  };
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
