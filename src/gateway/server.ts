import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { AgentService } from "../agent/service.js";
import { type WebSocket, WebSocketServer } from "../client/ws-lib.js";
import { type LoopgateConfig, resolveSecretRef } from "../config/index.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { Semaphore } from "../infra/semaphore.js";
import { composeNode, type LoopgateNode } from "../node/compose.js";
import { PRE_AUTH_MAX_BYTES, PROTOCOL_VERSION } from "../protocol/frames.js";
import type { HealthResult, ShutdownEvent } from "../protocol/payloads.js";
import { loopgateVersion } from "../protocol/version.js";
import type { ModelProvider } from "../providers/types.js";
import { CorruptDatabaseError } from "../storage/integrity.js";
import { isLoopbackHost, resolveBindHost, wsUrl } from "./bind.js";
import { Broadcaster } from "./broadcast.js";
import { ConfigReloader, type ReloadOutcome } from "./config-reload.js";
import { GatewayConnection } from "./connection.js";
import { AuthenticatedConnections } from "./connection-caps.js";
import { ConsoleAssets } from "./console-assets.js";
import type { GatewayContext, GatewayLimits } from "./context.js";
import { GatewayStartError } from "./errors.js";
import { type HttpRoute, httpRoutes } from "./http-routes.js";
import { methodRegistry } from "./methods/index.js";
import { type MetricsListener, startMetricsListener } from "./metrics-route.js";
import { BrowserAccess } from "./origin.js";
import { PreAuthAdmission, watchSilence } from "./preauth-admission.js";
import { attachGatewayServices, type GatewayServices } from "./services.js";
import { sessionInfo } from "./session-info.js";
import { bearerGrant, configuredTokenGrants, readsWholeGateway, type TokenGrants } from "./token-grants.js";

export interface GatewayStartInfo {
  url: string;
  port: number;
  host: string;
  service: AgentService;
}

export interface GatewayOptions {
  /**
   * An already-composed node (role "gateway": it has the audit ledger); it stays the caller's to close. The gateway
   * still recovers what a previous process left and starts cron, pruning and init on it.
   */
  node?: LoopgateNode;
  /** Without `node`: the gateway composes one (src/node/) from `config` and `stateDir`, and closes it. */
  config?: LoopgateConfig;
  stateDir?: string;
  /** Provider instances for a node the gateway composes (tests, embedding apps). */
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
  /**
   * Called once the port is listening (plugins may still be loading: `handle.ready`). The gateway fires its own
   * `gateway_start` / `gateway:startup` hooks (lifecycle-hooks.ts); this is for the embedding app.
   */
  onStartup?: (info: GatewayStartInfo) => void | Promise<void>;
  /** Called after runs were drained and `gateway_stop` fired, before sockets and the store close. */
  onShutdown?: (info: { reason: string }) => void | Promise<void>;
  /** The web console's built files (default: dist/console beside the gateway's own code). */
  consoleDir?: string;
  /**
   * The file the config came from (it may not exist yet): the gateway watches it per `gateway.reload`, reloads it
   * on `handle.reloadConfig()` (the CLI's SIGHUP), and config.patch / config.apply write it (SPEC 26). Without it
   * the config is fixed for the process's life and config.patch answers `unavailable`.
   */
  configFile?: string;
}

export interface GatewayHandle {
  url: string;
  port: number;
  host: string;
  server: http.Server;
  service: AgentService;
  /** settles once plugins are loaded and the `gateway_start` hooks have run (a failed init is logged, not thrown) */
  readonly ready: Promise<void>;
  /** the web console's address (`http://host:port/`), when the console is built and served; else undefined */
  consoleUrl: string | undefined;
  /** connections currently open (handshaking or ready) */
  readonly connectionCount: number;
  /** where Prometheus scrapes this gateway (`http://host:port/metrics`) when gateway.metrics.enabled; else undefined */
  metricsUrl: string | undefined;
  /**
   * Reads the config file again and applies it if it changed (SIGHUP); a bad file is logged and ignored. Resolves
   * `undefined` when the gateway was not given its file.
   */
  reloadConfig(reason: string): Promise<ReloadOutcome | undefined>;
  /**
   * Drain and stop: sends `shutdown`, refuses new runs (retryable), gives running runs `shutdownGraceMs`, aborts
   * and records the rest, then closes sockets (and the node, if the gateway composed it). Idempotent.
   */
  close(reason?: string): Promise<void>;
}

export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

/** A Postgres node without its store: `/health` answers 503 so a load balancer's check takes it out. */
function unservable(h: HealthResult): boolean {
  return h.degraded?.reason === "store unreachable" || h.degraded?.reason === "leases lost";
}
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
  const grant = bearerGrant(header, tokens);
  return typeof grant !== "string" && readsWholeGateway(grant);
}

export async function startGateway(opts: GatewayOptions): Promise<GatewayHandle> {
  const node = opts.node ?? (await composeGatewayNode(opts));
  const owned = opts.node === undefined;
  try {
    // several nodes on one Postgres: this node joins the cluster before it recovers or serves
    await node.start();
    return await listen(node, opts, owned);
  } catch (err) {
    if (owned) await node.close();
    throw err;
  }
}

/** A corrupt database is a start failure the CLI reports as a usage problem (exit 2), not a crash. */
async function composeGatewayNode(opts: GatewayOptions): Promise<LoopgateNode> {
  if (!opts.config || !opts.stateDir)
    throw new GatewayStartError("startGateway: pass `node`, or `config` and `stateDir`");
  try {
    return await composeNode({
      role: "gateway",
      config: opts.config,
      stateDir: opts.stateDir,
      providers: opts.providers,
      clock: opts.clock,
      logger: opts.logger,
    });
  } catch (err) {
    if (err instanceof CorruptDatabaseError) throw new GatewayStartError(err.message, { cause: err });
    throw err;
  }
}

/** Where and how the gateway listens, from its options over `gateway.*`; refuses a public bind without auth. */
function gatewaySettings(node: LoopgateNode, opts: GatewayOptions) {
  const rt = node.runtime;
  const cfg = rt.config.gateway;
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
  return {
    host,
    port: opts.port ?? cfg.port,
    tokens,
    limits,
    silentTimeoutMs: opts.preAuthSilentTimeoutMs ?? cfg.preAuth.silentTimeoutMs,
    graceMs: opts.shutdownGraceMs ?? cfg.shutdownGraceMs,
  };
}

/** The bus's events, exec approvals and session notices, sent to the connections that may see them. */
function createBroadcaster(service: AgentService, opts: GatewayOptions, clock: Clock): Broadcaster {
  const rt = service.rt;
  const broadcaster = new Broadcaster({
    clock,
    chatDeltaIntervalMs: opts.chatDeltaIntervalMs ?? DEFAULT_CHAT_DELTA_INTERVAL_MS,
    // chat deltas leave on the beat the runs' assistant deltas leave on, in the same writes (infra/cadence.ts)
    beat: clock === rt.clock ? rt.streamBeat : undefined,
  });
  broadcaster.attach(rt.bus);
  broadcaster.attachApprovals(rt.execApprovals, rt.spend?.approvals);
  broadcaster.attachSessions(service.sessionEvents, async (key) => {
    const s = await service.session(key);
    return s ? sessionInfo(s, { running: service.activeRuns(key).length > 0 }) : undefined;
  });
  return broadcaster;
}

async function listen(node: LoopgateNode, opts: GatewayOptions, owned: boolean): Promise<GatewayHandle> {
  const { service, runtime: rt } = node;
  const clock = opts.clock ?? rt.clock;
  const logger = opts.logger ?? rt.logger;
  const settings = gatewaySettings(node, opts);
  const broadcaster = createBroadcaster(service, opts, clock);
  const services = await attachGatewayServices(node, broadcaster, clock, logger);
  const configFile = opts.configFile ? configReloader(node, opts.configFile, clock, logger) : undefined;
  const gw = gatewayContext(node, services, broadcaster, settings, clock, logger, configFile);
  const sockets: Sockets = { connections: new Set(), closing: undefined };
  const browsers = new BrowserAccess({
    bindHost: settings.host,
    port: () => (server.address() as AddressInfo).port,
    allowedOrigins: rt.config.gateway.allowedOrigins,
  });
  const consoleAssets = new ConsoleAssets(opts.consoleDir);
  const metricsCfg = rt.config.gateway.metrics;
  // with a port of its own, /metrics is served there and not here
  const routes = httpRoutes({
    gw,
    browsers,
    ...(node.metrics && metricsCfg.port === undefined ? { metrics: node.metrics } : {}),
  });
  const server: http.Server = http.createServer(httpHandler(gw, settings, sockets, browsers, consoleAssets, routes));
  server.on("clientError", (_err, socket) => socket.destroy());
  const wss = acceptWebSockets(server, gw, settings, sockets, browsers);
  node.metrics?.countConnections(() => sockets.connections.size);
  let metricsListener: MetricsListener | undefined;
  try {
    await listenOn(server, settings);
    if (node.metrics && metricsCfg.port !== undefined) {
      metricsListener = await startMetricsListener({
        // default: where the gateway itself listens
        host: metricsCfg.bind !== undefined ? resolveBindHost(metricsCfg.bind) : settings.host,
        port: metricsCfg.port,
        metrics: node.metrics,
        tokens: settings.tokens,
        allowedOrigins: rt.config.gateway.allowedOrigins,
        logger,
      });
    }
  } catch (err) {
    if (server.listening) await new Promise((resolve) => server.close(resolve));
    broadcaster.detach();
    services.detach();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  await services.begin(port);
  configFile?.start();
  const url = wsUrl(settings.host, port);
  logger.info("listening", { url, version: gw.version });
  const metricsUrl = !node.metrics ? undefined : (metricsListener?.url ?? `${url.replace(/^ws:/, "http:")}/metrics`);
  if (metricsUrl) logger.info("metrics", { url: metricsUrl });
  const tick = setInterval(() => broadcaster.broadcast("tick", { ts: clock.now() }), settings.limits.tickIntervalMs);
  tick.unref();
  const running: RunningGateway = {
    node,
    owned,
    opts,
    gw,
    services,
    settings,
    sockets,
    server,
    wss,
    tick,
    routes,
    metricsListener,
    configFile,
  };
  const close = (reason = "gateway stopping"): Promise<void> => {
    sockets.closing ??= closeGateway(running, reason);
    return sockets.closing;
  };
  const handle: GatewayHandle = {
    url,
    port,
    host: settings.host,
    ready: services.ready,
    consoleUrl: consoleAssets.available ? `${url.replace(/^ws:/, "http:")}/` : undefined,
    metricsUrl,
    server,
    service,
    get connectionCount() {
      return sockets.connections.size;
    },
    reloadConfig: (reason) => configFile?.reload(reason) ?? Promise.resolve(undefined),
    close,
  };
  try {
    await opts.onStartup?.({ url, port, host: settings.host, service });
  } catch (err) {
    await close("startup hook failed");
    throw err;
  }
  return handle;
}

/**
 * The config file's reloader (SPEC 26), in the mode and debounce the gateway started with; a candidate's sandbox
 * backends are checked as at start before it is applied.
 */
function configReloader(node: LoopgateNode, file: string, clock: Clock, logger: Logger): ConfigReloader {
  const { reload } = node.runtime.config.gateway;
  const mode = reload.mode === "restart" ? "hybrid" : reload.mode;
  return new ConfigReloader({
    file,
    live: node.live,
    env: node.runtime.env,
    logger,
    clock,
    mode,
    debounceMs: reload.debounceMs,
    check: (next) => node.runtime.sandboxes.checkConfig(next),
  });
}

/** What every connection and handler shares: one per running gateway. */
function gatewayContext(
  node: LoopgateNode,
  services: GatewayServices,
  broadcaster: Broadcaster,
  settings: Settings,
  clock: Clock,
  logger: Logger,
  configFile: ConfigReloader | undefined,
): GatewayContext {
  const startedAt = clock.now();
  const version = loopgateVersion();
  return {
    service: node.service,
    broadcaster,
    logger,
    runLog: services.runLog,
    version,
    tokens: settings.tokens,
    limits: settings.limits,
    methods: methodRegistry(),
    now: () => clock.now(),
    uptimeMs: () => clock.now() - startedAt,
    health: () => services.health(startedAt, version),
    audit: services.audit,
    cron: services.cron,
    isTransientStoreError: (err) => node.isTransientStoreError(err),
    // a getter: a reloaded config may start, stop or restart the monitor (services.ts)
    get diagnostics() {
      return services.diagnostics;
    },
    connections: new AuthenticatedConnections(node.runtime.config.gateway),
    imageWork: new Semaphore(node.runtime.config.gateway.attachments.imageConcurrency),
    historyPages: new Semaphore(1),
    ...(configFile ? { configFile } : {}),
  };
}

/** A listening gateway's parts, as its close takes them apart. */
interface RunningGateway {
  node: LoopgateNode;
  /** composed by the gateway, so closed by it; an injected node is its caller's */
  owned: boolean;
  opts: GatewayOptions;
  gw: GatewayContext;
  services: GatewayServices;
  settings: Settings;
  sockets: Sockets;
  server: http.Server;
  wss: WebSocketServer;
  tick: NodeJS.Timeout;
  /** the HTTP surfaces beside the WebSocket protocol (http-routes.ts) */
  routes: HttpRoute[];
  /** /metrics on gateway.metrics.port, when set */
  metricsListener: MetricsListener | undefined;
  configFile: ConfigReloader | undefined;
}

/**
 * The close, in order: `shutdown` to every client, no new job, the drain (new runs refused, running ones given the
 * grace, then aborted and recorded), the shutdown hook, listeners off, sockets closed, then the node's own close.
 */
async function closeGateway(g: RunningGateway, reason: string): Promise<void> {
  const { logger, broadcaster } = g.gw;
  logger.info("shutdown", { reason, graceMs: g.settings.graceMs });
  const serverClosed = new Promise<void>((resolve) => g.server.close(() => resolve()));
  const shutdown: ShutdownEvent = { reason };
  broadcaster.broadcast("shutdown", shutdown);
  await g.services.stop();
  // no reload during the drain: the config the runs end with is the one they had
  g.configFile?.close();
  await g.node.service.drain(g.settings.graceMs);
  await g.services.announceStop(reason);
  try {
    await g.opts.onShutdown?.({ reason });
  } catch (err) {
    logger.error("shutdown hook failed", { error: (err as Error)?.message ?? String(err) });
  }
  clearInterval(g.tick);
  await Promise.all([...g.routes.map((r) => r.close?.()), g.metricsListener?.close()]);
  g.services.detach();
  broadcaster.detach();
  await closeSockets(g.sockets, g.wss, g.server);
  await serverClosed;
  // the node's close order: audit rows and run events written, bus, cluster member, store (node/compose.ts)
  if (g.owned) await g.node.close();
  else await Promise.all([g.services.audit.flush(), g.node.runtime.runEvents.flush()]);
}

type Settings = ReturnType<typeof gatewaySettings>;

/** The open connections and, once close began, its promise (new upgrades are refused, /health says draining). */
interface Sockets {
  connections: Set<GatewayConnection>;
  closing: Promise<void> | undefined;
}

/** `/health`, the configured routes (http-routes.ts), the web console's files and `/`; everything else is 404. */
function httpHandler(
  gw: GatewayContext,
  settings: Settings,
  sockets: Sockets,
  browsers: BrowserAccess,
  consoleAssets: ConsoleAssets,
  routes: readonly HttpRoute[],
): http.RequestListener {
  return (req, res) => {
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
      gw.logger.warn("request refused", { remote: req.socket.remoteAddress, path, reason: misdirected });
      return send(MISDIRECTED.status, { ok: false, error: misdirected });
    }
    if (path === "/health") {
      if (req.method !== "GET" && req.method !== "HEAD")
        return send(405, { ok: false, error: `${req.method} not allowed on /health` });
      const closing = sockets.closing !== undefined;
      const status = closing ? 503 : 200;
      // with auth configured, only a token that may read gets the details; anyone else learns up or down
      const details = healthDetailsAllowed(req.headers.authorization, settings.tokens);
      void gw.health().then(
        (h) => {
          // a node that cannot reach its store (or lost its leases) is out of a load balancer's rotation until it can;
          // other degradations (one MCP server down) still serve
          const code = unservable(h) ? 503 : status;
          if (!details) send(code, { ok: closing ? false : h.ok });
          else send(code, closing ? { ...h, ok: false, draining: true } : h);
        },
        (err: unknown) => send(503, { ok: false, error: (err as Error)?.message ?? String(err) }),
      );
      return;
    }
    const route = routes.find((r) => r.matches(req.method ?? "GET", path));
    if (route) {
      void Promise.resolve()
        .then(() => route.handle(req, res, path))
        .catch((err: unknown) => {
          gw.logger.error("http route failed", { route: route.name, error: (err as Error)?.message ?? String(err) });
          if (!res.headersSent) send(500, { ok: false, error: "internal error" });
          else res.destroy();
        });
      return;
    }
    const readOnly = req.method === "GET" || req.method === "HEAD";
    // the web console (SPEC 19): index.html at `/`, its hashed assets under /assets/
    if (readOnly && consoleAssets.serve(req, res, path)) return;
    if (path === "/" && readOnly) {
      // a gateway run from src/ (no console built) still says what it is
      return send(200, {
        name: "loopgate",
        version: gw.version,
        protocol: PROTOCOL_VERSION,
        websocket: true,
        health: "/health",
      });
    }
    send(404, { ok: false, error: `not found: ${req.method} ${path}` });
  };
}

/**
 * WebSocket upgrades: refused while closing or for a foreign Host; each admitted socket becomes a connection (the
 * pre-auth limit is what `ws` enforces while a frame arrives; `connect` raises it, message-limit.ts). Messages are
 * emitted one per event-loop turn, so a connection that sends many frames at once takes turns with the others.
 */
function acceptWebSockets(
  server: http.Server,
  gw: GatewayContext,
  settings: Settings,
  sockets: Sockets,
  browsers: BrowserAccess,
): WebSocketServer {
  const admission = new PreAuthAdmission(gw.service.rt.config.gateway.preAuth);
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: settings.limits.preAuthMaxBytes,
    allowSynchronousEvents: false,
  });
  const { logger, broadcaster } = gw;
  server.on("upgrade", (req, socket, head) => {
    socket.on("error", () => socket.destroy());
    if (sockets.closing) return reject(socket, 503, "Service Unavailable");
    const remote = req.socket.remoteAddress ?? "unknown";
    const misdirected = browsers.hostRefusal(req.headers.host);
    if (misdirected !== undefined) {
      logger.warn("upgrade refused", { remote, reason: misdirected });
      return reject(socket, MISDIRECTED.status, MISDIRECTED.text, JSON.stringify({ ok: false, error: misdirected }));
    }
    // a refused origin still gets its socket: the refusal comes as the answer to `connect`, which a browser client
    // can show (an HTTP 403 reaches the page as a bare close)
    const refusedOrigin = browsers.originRefusal(req.headers.origin, settings.tokens.required);
    wss.handleUpgrade(req, socket, head, (ws) => {
      let conn: GatewayConnection | undefined;
      const admitted = admission.admit(remote, (reason) => closeSilent(conn, reason));
      if (!admitted.ok) return refuseOverCap(ws, admitted.reason, logger, remote);
      const slot = admitted.slot;
      const silentMs = settings.silentTimeoutMs;
      const silence = watchSilence(req.socket, head, slot, silentMs, () =>
        closeSilent(conn, `sent nothing for ${silentMs} ms after the upgrade`),
      );
      const onClosed = (c: GatewayConnection) => {
        silence.stop();
        slot.release();
        sockets.connections.delete(c);
        broadcaster.remove(c);
      };
      conn = new GatewayConnection(ws, gw, onClosed, req.socket.remoteAddress, slot.release, refusedOrigin);
      sockets.connections.add(conn);
    });
  });
  return wss;
}

/** Binds the port; a port in use or a bad host is a start error that says which. */
function listenOn(server: http.Server, settings: Settings): Promise<void> {
  const { host, port } = settings;
  return new Promise<void>((resolve, rejectListen) => {
    const onError = (err: NodeJS.ErrnoException) => {
      rejectListen(
        new GatewayStartError(
          err.code === "EADDRINUSE"
            ? `port ${port} on ${host} is already in use (is another gateway running?)`
            : `cannot listen on ${host}:${port}: ${err.message}`,
          { cause: err },
        ),
      );
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

/** Every connection is told the gateway is stopping and given a moment to answer the close; the rest are cut. */
async function closeSockets(sockets: Sockets, wss: WebSocketServer, server: http.Server): Promise<void> {
  const open = [...sockets.connections];
  for (const c of open) c.close(1001, "gateway stopping");
  await Promise.race([
    Promise.all(open.map((c) => c.whenClosed())),
    new Promise((resolve) => setTimeout(resolve, CLOSE_HANDSHAKE_MS).unref()),
  ]);
  for (const c of wss.clients) c.terminate();
  wss.close();
  server.closeAllConnections();
}
