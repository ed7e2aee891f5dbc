import { createHash, timingSafeEqual } from "node:crypto";
import {
  decodeDevicePublicKey,
  deviceAuthPayload,
  deviceIdForPublicKey,
  verifyDeviceSignature,
} from "../protocol/device.js";
import { ErrorCodes, type ErrorShape, OPERATOR_SCOPES } from "../protocol/frames.js";
import type { ConnectParams } from "../protocol/params.js";

/** Both sides are hashed first so the comparison takes the same time whatever the lengths are. */
export function tokenMatches(expected: string, given: string): boolean {
  const a = createHash("sha256").update(expected, "utf8").digest();
  const b = createHash("sha256").update(given, "utf8").digest();
  return timingSafeEqual(a, b);
}

/** A device signature older or newer than this is refused, so a captured connect cannot be replayed later. */
export const DEVICE_SIGNATURE_MAX_SKEW_MS = 10 * 60 * 1000;

function unauthorized(message: string): ErrorShape {
  return { code: ErrorCodes.unauthorized, message };
}

/** Checks the token (when the gateway has one) and the device block (when the client sent one). */
export function authenticate(
  params: ConnectParams,
  opts: { token?: string; nonce: string; now: number },
): ErrorShape | undefined {
  if (opts.token !== undefined) {
    const given = params.auth?.token;
    if (given === undefined || given === "") {
      return unauthorized("params.auth.token: required (this gateway requires a token)");
    }
    if (!tokenMatches(opts.token, given)) return unauthorized("params.auth.token: invalid token");
  }
  const device = params.device;
  if (!device) return undefined;
  const raw = decodeDevicePublicKey(device.publicKey);
  if (!raw) return unauthorized("params.device.publicKey: expected a raw 32-byte Ed25519 public key in base64url");
  if (deviceIdForPublicKey(raw) !== device.id.toLowerCase()) {
    return unauthorized("params.device.id: does not match the public key (expected the hex SHA-256 of its 32 bytes)");
  }
  if (device.nonce !== opts.nonce)
    return unauthorized("params.device.nonce: does not match the connect.challenge nonce");
  if (Math.abs(opts.now - device.signedAt) > DEVICE_SIGNATURE_MAX_SKEW_MS) {
    return unauthorized("params.device.signedAt: too far from the gateway's clock");
  }
  const payload = deviceAuthPayload({
    deviceId: device.id,
    clientId: params.client.id,
    clientMode: params.client.mode,
    role: params.role ?? "operator",
    scopes: params.scopes ?? [],
    signedAt: device.signedAt,
    token: params.auth?.token ?? "",
    nonce: device.nonce,
    platform: params.client.platform,
    deviceFamily: params.client.deviceFamily ?? "",
  });
  if (!verifyDeviceSignature(raw, payload, device.signature)) {
    return unauthorized("params.device.signature: invalid signature for the v3 device payload");
  }
  return undefined;
}

/**
 * Granted scopes: what the client asked for, limited to the operator scopes we know; all of them when it asked
 * for none (a token holder — or anyone on an unauthenticated loopback gateway — is fully trusted).
 */
export function grantScopes(requested: readonly string[] | undefined): string[] {
  if (requested === undefined) return [...OPERATOR_SCOPES];
  const known = new Set<string>(OPERATOR_SCOPES);
  return [...new Set(requested.filter((s) => known.has(s)))];
}

export type MethodScope = "read" | "write" | "admin";

const satisfying: Record<MethodScope, readonly string[]> = {
  read: ["operator.admin", "operator.write", "operator.read"],
  write: ["operator.admin", "operator.write"],
  admin: ["operator.admin"],
};

export function requiredScope(scope: MethodScope): string {
  return scope === "read" ? "operator.read" : scope === "write" ? "operator.write" : "operator.admin";
}

export function hasScope(granted: readonly string[], scope: MethodScope): boolean {
  return satisfying[scope].some((s) => granted.includes(s));
}

/**
 * Event visibility: `operator.admin` / `operator.read` see every session; any other client sees only the sessions
 * it sent a message to (`agent` / `chat.send`) on this connection.
 */
export function seesAllSessions(granted: readonly string[]): boolean {
  return granted.includes("operator.admin") || granted.includes("operator.read");
}
