import type http from "node:http";
import type { NodeMetrics } from "../metrics/node-metrics.js";
import type { GatewayContext } from "./context.js";
import { metricsRoute } from "./metrics-route.js";
import { openAiHttpRoute } from "./openai-http/route.js";
import type { BrowserAccess } from "./origin.js";

/**
 * An HTTP surface beside the WebSocket protocol on the gateway's port (SPEC 26: the OpenAI-compatible API, the
 * Prometheus endpoint). The handler asks each route in order after the Host check and before the console's files;
 * the first that takes the request answers it. A route does its own auth (bearer tokens, gateway.tokens) and its own
 * body limits: nothing is read before it says the request is its own.
 */
export interface HttpRoute {
  /** a short name for logs */
  readonly name: string;
  /** true when this route answers `method path` (the path without its query); nothing may be read before */
  matches(method: string, path: string): boolean;
  handle(req: http.IncomingMessage, res: http.ServerResponse, path: string): void | Promise<void>;
  /** stops what the route started (open streams, timers); called in the gateway's close before sockets close */
  close?(): void | Promise<void>;
}

/** What a route is built from: the gateway's shared context. */
export interface HttpRouteContext {
  gw: GatewayContext;
  /** the Host / Origin rules (origin.ts): a route with a tokenless grant refuses a foreign browser origin with them */
  browsers?: BrowserAccess;
  /** the node's metrics, when they are on and served on this port (not on a gateway.metrics.port of their own) */
  metrics?: NodeMetrics;
}

/**
 * The routes this gateway serves, by config. Each surface adds itself here, off by default in config.
 */
export function httpRoutes(ctx: HttpRouteContext): HttpRoute[] {
  const routes: HttpRoute[] = [];
  // the OpenAI-compatible API (SPEC 26): gateway.* keys are read once, at start
  const endpoints = ctx.gw.service.rt.config.gateway.http.endpoints;
  routes.push(
    openAiHttpRoute(ctx.gw, ctx.browsers, {
      chatCompletions: endpoints.chatCompletions.enabled,
      responses: endpoints.responses.enabled,
    }),
  );
  if (ctx.metrics) routes.push(metricsRoute(ctx.metrics, ctx.gw.tokens));
  return routes;
}
