import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { AgentRuntime } from "../agent/runtime.js";
import { AgentService } from "../agent/service.js";
import { type WebSocket, WebSocketServer } from "../client/ws-lib.js";
import type { ClusterNode } from "../cluster/node.js";
import { clusterNodeFor } from "../cluster/wire.js";
import { type LoopgateConfig, resolveSecretRef } from "../config/index.js";
import { CronScheduler } from "../cron/scheduler.js";
import { defaultAbortMs } from "../diagnostics/classify.js";
import { DiagnosticsMonitor } from "../diagnostics/monitor.js";
import { AuditLedger } from "../events/audit-ledger.js";
import { startAuditPruning } from "../events/audit-retention.js";
import { type PgBusSource, PgEventBus } from "../events/pg-bus.js";
import { PgSessionRelay } from "../events/pg-session-relay.js";
import { type Clock, systemClock } from "../infra/clock.js";
import { createLogger, type Logger } from "../infra/logger.js";
import { Semaphore } from "../infra/semaphore.js";
import { PRE_AUTH_MAX_BYTES, PROTOCOL_VERSION } from "../protocol/frames.js";
import type { HealthResult, ShutdownEvent } from "../protocol/payloads.js";
import { loopgateVersion } from "../protocol/version.js";
import type { ModelProvider } from "../providers/types.js";
import { createStore } from "../storage/create-store.js";
import { CorruptDatabaseError } from "../storage/integrity.js";
import type { Store } from "../storage/types.js";
import type { McpToolSource } from "../tools/mcp/source.js";
import { closingMcpToo, startMcp } from "../tools/mcp/start.js";
import { mcpRuntimeOptions } from "../tools/mcp/tool-source.js";
import { isLoopbackHost, resolveBindHost, wsUrl } from "./bind.js";
import { Broadcaster } from "./broadcast.js";
import { GatewayConnection } from "./connection.js";
import { AuthenticatedConnections } from "./connection-caps.js";
import { ConsoleAssets } from "./console-assets.js";
import type { GatewayContext, GatewayLimits } from "./context.js";
import { GatewayStartError } from "./errors.js";
import { withMcpHealth } from "./mcp-health.js";
import { methodRegistry } from "./methods/index.js";
import { BrowserAccess } from "./origin.js";
import { PreAuthAdmission, watchSilence } from "./preauth-admission.js";
import { RunLog } from "./run-log.js";
import { startRunPruning } from "./run-pruning.js";
import { sessionInfo } from "./session-info.js";
import { configuredTokenGrants, type TokenGrants } from "./token-grants.js";

export interface GatewayStartInfo {
  url: string;
  port: number;
  host: string;
  service: AgentService;
}

export interface GatewayOptions {
  /** An already-built service; its store stays the caller's to close. */
  service?: AgentService;
  /** Without `service`: the gateway opens the store in `stateDir` and builds runtime and service itself. */
  config?: LoopgateConfig;
  stateDir?: string;
  /** Provider instances for a runtime the gateway builds (tests, embedding apps). */
  providers?: Record<string, ModelProvider>;
  clock?: Clock;
  logger?: Logger;
  /** 0 picks a free port. Default `gateway.port`. */
  port?: number;
  /** Default from `gateway.bind` (loopback → 127.0.0.1). */
  host?: string;
  /** Clients must present it in `connect`. Default `gateway.auth.token`. Required for a non-loopback host. */
  token?: string;
  tickIntervalMs?: number;
  maxPayload?: number;
  maxBufferedBytes?: number;
  slowConsumerMs?: number;
  maxPageBytes?: number;
  shutdownGraceMs?: number;
  preAuthMaxBytes?: number;
  /** A socket that has not completed `connect` by then is closed. */
  handshakeTimeoutMs?: number;
  /** A socket that has sent nothing by then is closed. Default `gateway.preAuth.silentTimeoutMs`. */
  preAuthSilentTimeoutMs?: number;
  /** Chat `delta` events are sent at most this often per run. */
  chatDeltaIntervalMs?: number;
  /** Hook point `gateway:startup`: called once the port is listening. */
  onStartup?: (info: GatewayStartInfo) => void | Promise<void>;
  /** Hook point `gateway:shutdown`: called after runs were drained, before sockets and the store close. */
  onShutdown?: (info: { reason: string }) => void | Promise<void>;
  /** The web console's built files (default: dist/console beside the gateway's own code). */
  consoleDir?: string;
}

export interface GatewayHandle {
  url: string;
  port: number;
  host: string;
  server: http.Server;
  service: AgentService;
  /** connections currently open (handshaking or ready) */
  readonly connectionCount: number;
  /**
   * Drain and stop: sends `shutdown`, refuses new runs (retryable), gives running runs `shutdownGraceMs`, aborts
   * and records the rest, then closes sockets (and the store, if the gateway opened it). Idempotent.
   */
  close(reason?: string): Promise<void>;
}

export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;
export const DEFAULT_CHAT_DELTA_INTERVAL_MS = 75;
/** How long closing sockets may take to answer the close handshake before they are cut. */
const CLOSE_HANDSHAKE_MS = 1000;

function reject(socket: Duplex, status: number, text: string, body = ""): void {
  const length = Buffer.byteLength(body);
  const type = body ? "Content-Type: application/json; charset=utf-8\r\n" : "";
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\n${type}Content-Length: ${length}\r\n\r\n${body}`);
}

/**
 * A request whose `Host` is not one of this gateway's names (origin.ts) is answered 421 Misdirected Request: the
 * request reached a server that does not serve that name, which is what a DNS-rebound page's request is.
 */
const MISDIRECTED = { status: 421, text: "Misdirected Request" } as const;

/** "Try again later": the close code for a connection refused because too many others are still handshaking. */
const CLOSE_TRY_AGAIN_LATER = 1013;

function refuseOverCap(ws: WebSocket, reason: string, logger: Logger, remote: string): void {
  logger.warn("connection refused", { remote, reason });
  ws.close(CLOSE_TRY_AGAIN_LATER, reason);
  // a peer that does not answer the close handshake must not keep the socket for ws's 30 s close timeout
  setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS).unref();
}

/**
 * A connection closed for silence (nothing sent in `preAuth.silentTimeoutMs`, or the oldest silent one when a
 * pre-auth cap is full): "try again later" with the reason, cut off if it does not answer the close.
 */
function closeSilent(conn: GatewayConnection | undefined, reason: string): void {
  if (!conn) return;
  // the disconnect line that follows carries the reason
  conn.close(CLOSE_TRY_AGAIN_LATER, reason);
  setTimeout(() => conn.terminate(), CLOSE_HANDSHAKE_MS).unref();
}

/**
 * `/health` details: open without auth; with auth, for `Authorization: Bearer <token>` of a token that may read
 * every session (a token limited to some is one tenant's, and the details are the whole gateway's).
 */
function healthDetailsAllowed(header: string | undefined, tokens: TokenGrants): boolean {
  if (!tokens.required) return true;
  const m = /^Bearer\s+(.+)$/i.exec(header ?? "");
  const grant = m ? tokens.match(m[1].trim()) : undefined;
  if (grant === undefined || !grant.sessions.includes("*")) return false;
  return grant.scopes.includes("operator.read") || grant.scopes.includes("operator.admin");
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

/** Starts the bus's LISTEN (a node must not serve deaf) and relays session notices between nodes. */
async function startSessionRelay(
  rt: AgentService["rt"],
  service: AgentService,
  broadcaster: Broadcaster,
  logger: Logger,
): Promise<PgSessionRelay> {
  await (rt.bus as PgEventBus).ready();
  return PgSessionRelay.start({
    source: rt.store as unknown as PgBusSource,
    events: service.sessionEvents,
    store: rt.store,
    wantsMessages: (key) => broadcaster.followsMessages(key),
    onError: (err) => logger.warn("session notices across nodes", { error: err.message }),
  });
}

export async function startGateway(opts: GatewayOptions): Promise<GatewayHandle> {
  let ownedStore: Store | undefined;
  let cluster: ClusterNode | undefined;
  let mcp: McpToolSource | undefined;
  let service = opts.service;
  if (!service) {
    if (!opts.config || !opts.stateDir)
      throw new GatewayStartError("startGateway: pass `service`, or `config` and `stateDir`");
    ownedStore = await openGatewayStore(opts.config, opts.stateDir, opts.logger);
    // several nodes on one Postgres: sessions are owned by lease (src/cluster/); SQLite gets none of it
    cluster = await clusterNodeFor(ownedStore, opts.config, opts.logger ?? createLogger());
    mcp = await startMcp(opts.config, { logger: opts.logger ?? createLogger() });
    const rt = new AgentRuntime({
      config: opts.config,
      stateDir: opts.stateDir,
      store: ownedStore,
      providers: opts.providers,
      clock: opts.clock,
      logger: opts.logger,
      ...(cluster ? { sessionLocks: cluster.locks } : {}),
      ...mcpRuntimeOptions(mcp, opts.config),
    });
    service = new AgentService(rt);
    if (cluster) {
      service.attachCluster(cluster);
      await cluster.start();
    }
  }
  try {
    return closingMcpToo(await listen(service, opts, ownedStore), mcp);
  } catch (err) {
    await mcp?.close();
    await cluster?.stopBeating();
    if (ownedStore) {
      await service.rt.runEvents.close();
      if (service.rt.bus instanceof PgEventBus) service.rt.bus.close();
      await ownedStore.close();
    }
    throw err;
  }
}

/** A corrupt database is a start failure the CLI reports as a usage problem (exit 2), not a crash. */
async function openGatewayStore(config: LoopgateConfig, stateDir: string, logger?: Logger): Promise<Store> {
  try {
    return await createStore(config, stateDir, { owner: true, logger });
  } catch (err) {
    if (err instanceof CorruptDatabaseError) throw new GatewayStartError(err.message, { cause: err });
    throw err;
  }
}

async function listen(
  service: AgentService,
  opts: GatewayOptions,
  ownedStore: Store | undefined,
): Promise<GatewayHandle> {
  const rt = service.rt;
  const cfg = rt.config.gateway;
  const clock = opts.clock ?? rt.clock ?? systemClock;
  const logger = opts.logger ?? rt.logger ?? createLogger();
  const host = opts.host ?? resolveBindHost(cfg.bind);
  const token = opts.token ?? resolveSecretRef(cfg.auth.token, "gateway.auth.token", rt.env);
  const tokens = configuredTokenGrants(token, cfg.auth.tokens, rt.env);
  if (!isLoopbackHost(host) && !tokens.required) {
    throw new GatewayStartError(
      `refusing to bind ${host} without authentication: set gateway.auth.token or gateway.auth.tokens (or pass --token), or bind loopback`,
    );
  }
  const limits: GatewayLimits = {
    maxPayload: opts.maxPayload ?? cfg.maxPayload,
    maxBufferedBytes: opts.maxBufferedBytes ?? cfg.maxBufferedBytes,
    slowConsumerMs: opts.slowConsumerMs ?? cfg.slowConsumerMs,
    maxPageBytes: opts.maxPageBytes ?? cfg.maxPageBytes,
    tickIntervalMs: opts.tickIntervalMs ?? cfg.tickIntervalMs,
    preAuthMaxBytes: opts.preAuthMaxBytes ?? PRE_AUTH_MAX_BYTES,
    handshakeTimeoutMs: opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
    maxInFlightPerConnection: cfg.maxInFlightPerConnection,
    maxMessageSubscriptionsPerConnection: cfg.maxMessageSubscriptionsPerConnection,
    maxAttachmentBytesInFlight: cfg.attachments.maxInFlightBytesPerConnection,
  };
  const admission = new PreAuthAdmission(cfg.preAuth);
  const silentTimeoutMs = opts.preAuthSilentTimeoutMs ?? cfg.preAuth.silentTimeoutMs;
  const graceMs = opts.shutdownGraceMs ?? cfg.shutdownGraceMs;
  const startedAt = clock.now();
  const version = loopgateVersion();
  const broadcaster = new Broadcaster({
    clock,
    chatDeltaIntervalMs: opts.chatDeltaIntervalMs ?? DEFAULT_CHAT_DELTA_INTERVAL_MS,
    // chat deltas leave on the beat the runs' assistant deltas leave on, in the same writes (infra/cadence.ts)
    beat: clock === rt.clock ? rt.streamBeat : undefined,
  });
  broadcaster.attach(rt.bus);
  broadcaster.attachApprovals(rt.execApprovals);
  broadcaster.attachSessions(service.sessionEvents, async (key) => {
    const s = await service.session(key);
    return s ? sessionInfo(s, { running: service.activeRuns(key).length > 0 }) : undefined;
  });
  // gateway nodes on one Postgres: the bus listens before the first client does, session notices cross nodes
  const relay = rt.bus instanceof PgEventBus ? await startSessionRelay(rt, service, broadcaster, logger) : undefined;
  const runLog = new RunLog(logger, service);
  runLog.attach(rt.bus);
  // attached before recovery, so runs a previous process left are recorded as they are failed
  const audit = new AuditLedger({
    store: rt.store,
    clock,
    logger,
    queueSize: rt.config.audit.queueSize,
    actorOf: (runId) => service.originOf(runId)?.actor,
  });
  audit.attach(rt.bus);
  const cron = new CronScheduler({ service, config: rt.config.cron, clock, logger });
  const diagnostics = startDiagnostics(service, clock, logger, broadcaster);
  const health = async (): Promise<HealthResult> => {
    const degraded = service.sessions.storageFault();
    const sessions = await service.sessions.count();
    return withMcpHealth(
      {
        ok: !degraded,
        ...(degraded ? { degraded } : {}),
        version,
        uptimeMs: clock.now() - startedAt,
        activeRuns: service.activeRunCount,
        sessions,
        audit: audit.state(),
        ...(cron.enabled ? { cron: await cron.health() } : {}),
        queueDepth: service.queueDepth,
        stuckSessions: diagnostics?.stuckSessionCount ?? 0,
      },
      rt.mcpStatus,
    );
  };

  const gw: GatewayContext = {
    service,
    broadcaster,
    logger,
    runLog,
    version,
    tokens,
    limits,
    methods: methodRegistry(),
    now: () => clock.now(),
    uptimeMs: () => clock.now() - startedAt,
    health,
    audit,
    cron,
    ...(diagnostics ? { diagnostics } : {}),
    connections: new AuthenticatedConnections(cfg),
    imageWork: new Semaphore(cfg.attachments.imageConcurrency),
    historyPages: new Semaphore(1),
  };

  const consoleAssets = new ConsoleAssets(opts.consoleDir);
  const browsers = new BrowserAccess({
    bindHost: host,
    port: () => (server.address() as AddressInfo).port,
    allowedOrigins: cfg.allowedOrigins,
  });
  const connections = new Set<GatewayConnection>();
  let closing: Promise<void> | undefined;

  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        "content-type": "application/json; charset=utf-8",
        "content-length": Buffer.byteLength(text),
      });
      res.end(req.method === "HEAD" ? undefined : text);
    };
    const misdirected = browsers.hostRefusal(req.headers.host);
    if (misdirected !== undefined) {
      logger.warn("request refused", { remote: req.socket.remoteAddress, path, reason: misdirected });
      return send(MISDIRECTED.status, { ok: false, error: misdirected });
    }
    if (path === "/health") {
      if (req.method !== "GET" && req.method !== "HEAD")
        return send(405, { ok: false, error: `${req.method} not allowed on /health` });
      const status = closing ? 503 : 200;
      // with auth configured, only a token that may read gets the details; anyone else learns up or down
      const details = healthDetailsAllowed(req.headers.authorization, tokens);
      void health().then(
        (h) => {
          if (!details) send(status, { ok: closing ? false : h.ok });
          else send(status, closing ? { ...h, ok: false, draining: true } : h);
        },
        (err: unknown) => send(503, { ok: false, error: (err as Error)?.message ?? String(err) }),
      );
      return;
    }
    const readOnly = req.method === "GET" || req.method === "HEAD";
    // the web console (SPEC 19): index.html at `/`, its hashed assets under /assets/
    if (readOnly && consoleAssets.serve(req, res, path)) return;
    if (path === "/" && readOnly) {
      // a gateway run from src/ (no console built) still says what it is
      return send(200, { name: "loopgate", version, protocol: PROTOCOL_VERSION, websocket: true, health: "/health" });
    }
    send(404, { ok: false, error: `not found: ${req.method} ${path}` });
  });
  server.on("clientError", (_err, socket) => socket.destroy());

  // The pre-auth limit is what `ws` enforces while a frame arrives; `connect` raises it (message-limit.ts). Messages
  // are emitted one per event-loop turn, so a connection that sends many frames at once takes turns with the others.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.preAuthMaxBytes,
    allowSynchronousEvents: false,
  });
  server.on("upgrade", (req, socket, head) => {
    socket.on("error", () => socket.destroy());
    if (closing) return reject(socket, 503, "Service Unavailable");
    const remote = req.socket.remoteAddress ?? "unknown";
    const misdirected = browsers.hostRefusal(req.headers.host);
    if (misdirected !== undefined) {
      logger.warn("upgrade refused", { remote, reason: misdirected });
      return reject(socket, MISDIRECTED.status, MISDIRECTED.text, JSON.stringify({ ok: false, error: misdirected }));
    }
    // a refused origin still gets its socket: the refusal comes as the answer to `connect`, which a browser client
    // can show (an HTTP 403 reaches the page as a bare close)
    const refusedOrigin = browsers.originRefusal(req.headers.origin, tokens.required);
    wss.handleUpgrade(req, socket, head, (ws) => {
      let conn: GatewayConnection | undefined;
      const admitted = admission.admit(remote, (reason) => closeSilent(conn, reason));
      if (!admitted.ok) return refuseOverCap(ws, admitted.reason, logger, remote);
      const slot = admitted.slot;
      const silence = watchSilence(req.socket, head, slot, silentTimeoutMs, () =>
        closeSilent(conn, `sent nothing for ${silentTimeoutMs} ms after the upgrade`),
      );
      const onClosed = (c: GatewayConnection) => {
        silence.stop();
        slot.release();
        connections.delete(c);
        broadcaster.remove(c);
      };
      conn = new GatewayConnection(ws, gw, onClosed, req.socket.remoteAddress, slot.release, refusedOrigin);
      connections.add(conn);
    });
  });

  await new Promise<void>((resolve, rejectListen) => {
    const onError = (err: NodeJS.ErrnoException) => {
      broadcaster.detach();
      runLog.detach();
      void audit.close();
      diagnostics?.stop();
      rejectListen(
        new GatewayStartError(
          err.code === "EADDRINUSE"
            ? `port ${opts.port ?? cfg.port} on ${host} is already in use (is another gateway running?)`
            : `cannot listen on ${host}:${opts.port ?? cfg.port}: ${err.message}`,
          { cause: err },
        ),
      );
    };
    server.once("error", onError);
    server.listen(opts.port ?? cfg.port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  if (ownedStore) {
    // A gateway that opened the state dir owns what a previous process left: active runs are recorded as
    // failed, queued inputs run again. (An injected service is its owner's to recover.)
    const { failed, requeued } = await service.recover();
    if (failed.length || requeued.length) {
      logger.warn("recovered runs of a previous process", { failed: failed.length, requeued: requeued.length });
    }
    for (const runId of requeued) {
      const run = await service.sessions.run(runId);
      if (run) runLog.follow(runId, run.sessionKey);
    }
  }
  // after recovery: the previous process's queued inputs are back in the queue before a missed job is caught up
  // several nodes: one of them runs the cron jobs (whoever holds the cron lease), else each would fire every job
  const leader = service.clusterNode;
  if (leader) {
    leader.lead("cron", { gain: () => cron.start(), lose: () => cron.stop() });
    void leader.tick();
  } else await cron.start();
  const pruning = startRunPruning({ store: rt.store, limits: rt.config.session.runResults, clock, logger });
  const auditPruning = startAuditPruning({ store: rt.store, limits: rt.config.audit, clock, logger });
  // Plugins and internal hooks load in the background: the port answers at once, the first run awaits init().
  const initializing = rt
    .init()
    .catch((err) => logger.error("runtime init failed", { error: (err as Error)?.message ?? String(err) }));

  const port = (server.address() as AddressInfo).port;
  const url = wsUrl(host, port);
  logger.info("listening", { url, version });

  const tick = setInterval(() => broadcaster.broadcast("tick", { ts: clock.now() }), limits.tickIntervalMs);
  tick.unref();

  const close = (reason = "gateway stopping"): Promise<void> => {
    closing ??= (async () => {
      logger.info("shutdown", { reason, graceMs });
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      const shutdown: ShutdownEvent = { reason };
      broadcaster.broadcast("shutdown", shutdown);
      pruning.stop();
      auditPruning.stop();
      // no job starts during the drain
      cron.stop();
      // a gateway closed right after it started may still be seeding its workspace or loading plugins: once close
      // resolves, nothing of it is left writing into the state dir (which its owner may then remove)
      await initializing;
      // new runs are refused (retryable) from here on; running ones get the grace, then are aborted and recorded
      await service.drain(graceMs);
      try {
        await opts.onShutdown?.({ reason });
      } catch (err) {
        logger.error("shutdown hook failed", { error: (err as Error)?.message ?? String(err) });
      }
      clearInterval(tick);
      diagnostics?.stop();
      relay?.close();
      broadcaster.detach();
      runLog.detach();
      // every run has ended (drained or aborted and recorded): its last rows are written before the store closes
      await audit.close();
      const open = [...connections];
      for (const c of open) c.close(1001, "gateway stopping");
      await Promise.race([
        Promise.all(open.map((c) => c.whenClosed())),
        new Promise((resolve) => setTimeout(resolve, CLOSE_HANDSHAKE_MS).unref()),
      ]);
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await serverClosed;
      // the drained runs' last events are written before the store closes (an injected runtime keeps its writer)
      if (ownedStore) {
        await rt.runEvents.close();
        if (rt.bus instanceof PgEventBus) rt.bus.close();
        await ownedStore.close();
      } else await rt.runEvents.flush();
    })();
    return closing;
  };

  const handle: GatewayHandle = {
    url,
    port,
    host,
    server,
    service,
    get connectionCount() {
      return connections.size;
    },
    close,
  };
  try {
    await opts.onStartup?.({ url, port, host, service });
  } catch (err) {
    await close("startup hook failed");
    throw err;
  }
  return handle;
}
