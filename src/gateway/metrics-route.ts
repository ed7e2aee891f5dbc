import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../infra/logger.js";
import type { NodeMetrics } from "../metrics/node-metrics.js";
import { isLoopbackHost } from "./bind.js";
import { GatewayStartError } from "./errors.js";
import type { HttpRoute } from "./http-routes.js";
import { BrowserAccess } from "./origin.js";
import { bearerGrant, readsWholeGateway, type TokenGrants } from "./token-grants.js";

/**
 * `GET /metrics` (SPEC 26), and OpenClaw's path for the same text (`/api/diagnostics/prometheus`, its
 * diagnostics-prometheus plugin's), so a scrape config written for OpenClaw works unchanged.
 */
export const METRICS_PATHS: readonly string[] = ["/metrics", "/api/diagnostics/prometheus"];

/**
 * Who may scrape. With tokens configured: `Authorization: Bearer <token>` of a token that reads the whole gateway
 * (operator.read or operator.admin, every session: token-grants.ts `readsWholeGateway`), as for /health details;
 * none is 401, another is 403. Without any token: loopback clients only (403 for any other address).
 */
export function metricsRefusal(
  req: http.IncomingMessage,
  tokens: TokenGrants,
): { status: 401 | 403; error: string } | undefined {
  if (!tokens.required) {
    if (isLoopbackHost(req.socket.remoteAddress ?? "")) return undefined;
    return {
      status: 403,
      error:
        "metrics are served to loopback clients only when the gateway has no token (set gateway.auth.token or gateway.auth.tokens to scrape from another address)",
    };
  }
  const grant = bearerGrant(req.headers.authorization, tokens);
  if (grant === "missing") {
    return {
      status: 401,
      error: "Authorization: Bearer <token> required (a token with operator.read for every session)",
    };
  }
  if (grant === "invalid") return { status: 401, error: "invalid token" };
  if (!readsWholeGateway(grant)) {
    return {
      status: 403,
      error: `this token may not read metrics: they are the whole gateway's, so it needs operator.read or operator.admin for every session (it has scopes [${grant.scopes.join(", ")}], sessions [${grant.sessions.join(", ")}])`,
    };
  }
  return undefined;
}

function sendJson(req: http.IncomingMessage, res: http.ServerResponse, status: number, body: unknown, extra = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...extra,
  });
  res.end(req.method === "HEAD" ? undefined : text);
}

/** Answers one request for the metrics text: method, access, then the (shared) render. */
export async function serveMetrics(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  path: string,
  metrics: NodeMetrics,
  tokens: TokenGrants,
): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    return sendJson(
      req,
      res,
      405,
      { ok: false, error: `${req.method} not allowed on ${path} (GET or HEAD)` },
      {
        allow: "GET, HEAD",
      },
    );
  }
  const refusal = metricsRefusal(req, tokens);
  if (refusal) {
    const challenge = refusal.status === 401 ? { "www-authenticate": 'Bearer realm="loopgate"' } : {};
    return sendJson(req, res, refusal.status, { ok: false, error: refusal.error }, challenge);
  }
  const text = await metrics.render();
  if (res.destroyed) return;
  res.writeHead(200, {
    "content-type": metrics.contentType,
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(req.method === "HEAD" ? undefined : text);
}

/** The route on the gateway's own port (when gateway.metrics.port is not set). */
export function metricsRoute(metrics: NodeMetrics, tokens: TokenGrants): HttpRoute {
  return {
    name: "metrics",
    matches: (_method, path) => METRICS_PATHS.includes(path),
    handle: (req, res, path) => serveMetrics(req, res, path, metrics, tokens),
  };
}

/** A scrape that has sent no complete request by then is cut off (a slow client holds no socket for long). */
const METRICS_REQUEST_TIMEOUT_MS = 10_000;
/** Sockets the metrics port keeps at once; a scraper needs one, a dashboard a few. */
const METRICS_MAX_CONNECTIONS = 64;

export interface MetricsListener {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

/**
 * `gateway.metrics.port`: /metrics on a listener of its own (and then not on the gateway's port). Same access rule
 * and the same Host check as the gateway's port (a DNS-rebound page must not read a tokenless loopback gateway's
 * metrics); a non-loopback bind needs a token, as the gateway's own does. Everything else there is 404.
 */
export async function startMetricsListener(opts: {
  host: string;
  port: number;
  metrics: NodeMetrics;
  tokens: TokenGrants;
  allowedOrigins: readonly string[];
  logger: Logger;
}): Promise<MetricsListener> {
  const { host, metrics, tokens, logger } = opts;
  if (!isLoopbackHost(host) && !tokens.required) {
    throw new GatewayStartError(
      `refusing to serve metrics on ${host} without authentication: set gateway.auth.token or gateway.auth.tokens, or bind gateway.metrics.bind to loopback`,
    );
  }
  const browsers = new BrowserAccess({
    bindHost: host,
    port: () => (server.address() as AddressInfo).port,
    allowedOrigins: opts.allowedOrigins,
  });
  const server = http.createServer({ requestTimeout: METRICS_REQUEST_TIMEOUT_MS }, (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const misdirected = browsers.hostRefusal(req.headers.host);
    if (misdirected !== undefined) return sendJson(req, res, 421, { ok: false, error: misdirected });
    if (!METRICS_PATHS.includes(path)) {
      return sendJson(req, res, 404, {
        ok: false,
        error: `not found: ${req.method} ${path} (this port serves /metrics)`,
      });
    }
    serveMetrics(req, res, path, metrics, tokens).catch((err: unknown) => {
      logger.error("metrics failed", { error: (err as Error)?.message ?? String(err) });
      if (!res.headersSent) sendJson(req, res, 500, { ok: false, error: "internal error" });
      else res.destroy();
    });
  });
  server.headersTimeout = METRICS_REQUEST_TIMEOUT_MS;
  server.maxConnections = METRICS_MAX_CONNECTIONS;
  server.on("clientError", (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(
        new GatewayStartError(
          err.code === "EADDRINUSE"
            ? `gateway.metrics.port ${opts.port} on ${host} is already in use`
            : `cannot serve metrics on ${host}:${opts.port}: ${err.message}`,
          { cause: err },
        ),
      );
    server.once("error", onError);
    server.listen(opts.port, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    host,
    port,
    url: `http://${shown}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
