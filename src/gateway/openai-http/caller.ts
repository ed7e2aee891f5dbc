import { randomUUID } from "node:crypto";
import type http from "node:http";
import { ClientAccess } from "../access.js";
import { hasScope, requiredScope } from "../auth.js";
import type { CallerConnection, GatewayContext } from "../context.js";
import type { BrowserAccess } from "../origin.js";
import { FULL_GRANT, type Grant } from "../token-grants.js";
import { OpenAiHttpError } from "./errors.js";

/** Who the audit ledger says started a run over this API (a WebSocket client is its client id or device). */
export const HTTP_ACTOR = "openai-http";

/** One HTTP request as the gateway's handlers see a caller: for its duration, a client like a WebSocket one. */
export interface HttpCaller extends CallerConnection {
  /** frees the request's place under the connection caps (gateway.maxConnections / maxConnectionsPerToken) */
  release(): void;
}

/**
 * Bearer auth with the gateway's tokens (SPEC 21): the token's grant, with every scope it grants (a WebSocket client
 * that asks for none gets the same). Without any configured token (a loopback gateway) the request has the full
 * grant, as a WebSocket client does, except from a browser page of another origin (origin.ts): that one never gets a
 * tokenless grant. While it is served the request counts as one authenticated client under the connection caps.
 */
export function authenticateHttp(
  req: http.IncomingMessage,
  gw: GatewayContext,
  browsers: BrowserAccess | undefined,
  need: "read" | "write",
): HttpCaller {
  const refusedOrigin = browsers?.originRefusal(req.headers.origin, gw.tokens.required);
  if (refusedOrigin !== undefined) throw new OpenAiHttpError(403, refusedOrigin, { code: "origin_refused" });
  const grant = grantOf(req.headers.authorization, gw);
  const scopes = [...grant.scopes];
  if (!hasScope(scopes, need)) {
    throw new OpenAiHttpError(
      403,
      `this token may not ${need === "write" ? "start runs" : "read"}: it needs scope ${requiredScope(need)} (granted: ${scopes.join(", ") || "none"})`,
      { code: "missing_scope" },
    );
  }
  const admitted = gw.connections.admit(grant);
  if (!admitted.ok) {
    throw new OpenAiHttpError(429, admitted.error.message.replace(/^connect refused/, "request refused"), {
      code: "too_many_clients",
      headers: { "retry-after": "1" },
    });
  }
  return {
    connId: randomUUID(),
    scopes,
    access: new ClientAccess(scopes, grant),
    actor: HTTP_ACTOR,
    attachmentsInFlight: { bytes: 0 },
    release: admitted.release,
  };
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function grantOf(header: string | undefined, gw: GatewayContext): Grant {
  if (!gw.tokens.required) return FULL_GRANT;
  const unauthorized = (message: string) =>
    new OpenAiHttpError(401, message, { code: "invalid_api_key", headers: { "www-authenticate": "Bearer" } });
  if (!header) throw unauthorized("this gateway requires a token: send Authorization: Bearer <token>");
  const m = BEARER.exec(header);
  if (!m) throw unauthorized("the Authorization header must be Bearer <token>");
  const grant = gw.tokens.match(m[1]);
  // never the token itself in the message: it is a secret even when it is wrong (a near-miss of the real one)
  if (!grant) throw unauthorized("invalid token");
  return grant;
}
