import {
  decodeDevicePublicKey,
  deviceAuthPayload,
  deviceAuthPayloadV2,
  deviceIdForPublicKey,
  devicePayloadVersion,
  verifyDeviceSignature,
} from "../protocol/device.js";
import { ErrorCodes, type ErrorShape } from "../protocol/frames.js";
import type { ConnectParams } from "../protocol/params.js";
import { FULL_GRANT, type Grant, type TokenGrants } from "./token-grants.js";

/** A device signature older or newer than this is refused, so a captured connect cannot be replayed later. */
export const DEVICE_SIGNATURE_MAX_SKEW_MS = 10 * 60 * 1000;

function unauthorized(message: string): ErrorShape {
  return { code: ErrorCodes.unauthorized, message };
}

/**
 * Checks the token (when the gateway requires one) and the device block (when the client sent one). The answer is
 * the grant the token carries (every scope and session without a token, or for the single gateway.auth.token).
 */
export function authenticate(
  params: ConnectParams,
  opts: { tokens: TokenGrants; nonce: string; now: number },
): { error: ErrorShape } | { grant: Grant } {
  let grant: Grant = FULL_GRANT;
  if (opts.tokens.required) {
    // Loopgate has no password mode: a password is the shared secret under another name (OpenClaw's Control UI
    // sends it beside the token), so either one may carry it
    const given = [params.auth?.token, params.auth?.password].filter((s): s is string => !!s);
    if (given.length === 0) {
      return { error: unauthorized("params.auth.token: required (this gateway requires a token)") };
    }
    const matched = given.map((s) => opts.tokens.match(s)).find((g) => g !== undefined);
    if (!matched) return { error: unauthorized("params.auth.token: invalid token") };
    grant = matched;
  }
  const deviceError = checkDevice(params, opts);
  return deviceError ? { error: deviceError } : { grant };
}

function checkDevice(params: ConnectParams, opts: { nonce: string; now: number }): ErrorShape | undefined {
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
  const version = devicePayloadVersion(params.client.deviceFamily);
  // the token the client signed: the one it sent, or the password when that is what carries the secret
  const signedTokens = [...new Set([params.auth?.token ?? "", params.auth?.password ?? ""])];
  const signed = signedTokens.some((token) => {
    const fields = {
      deviceId: device.id,
      clientId: params.client.id,
      clientMode: params.client.mode,
      role: params.role ?? "operator",
      scopes: params.scopes ?? [],
      signedAt: device.signedAt,
      token,
      nonce: device.nonce,
    };
    const v3 = deviceAuthPayload({
      ...fields,
      platform: params.client.platform,
      deviceFamily: params.client.deviceFamily ?? "",
    });
    if (version === "v3") return verifyDeviceSignature(raw, v3, device.signature);
    // no device family: OpenClaw's web UI signs v2, a client that always signs v3 signs it with an empty family
    return (
      verifyDeviceSignature(raw, deviceAuthPayloadV2(fields), device.signature) ||
      verifyDeviceSignature(raw, v3, device.signature)
    );
  });
  if (!signed) {
    const why =
      version === "v3"
        ? "the v3 device payload (v3 because client.deviceFamily was sent)"
        : "the v2 device payload or the v3 one with an empty device family (no client.deviceFamily was sent)";
    return unauthorized(`params.device.signature: invalid signature for ${why}`);
  }
  return undefined;
}

/**
 * Granted scopes (SPEC 21): what the client asked for, limited to what its token grants; all the token grants
 * when it asked for none.
 */
export function grantScopes(requested: readonly string[] | undefined, allowed: readonly string[]): string[] {
  if (requested === undefined) return [...allowed];
  return [...new Set(requested.filter((s) => allowed.includes(s)))];
}

export type MethodScope = "read" | "write" | "admin" | "approvals";

const satisfying: Record<MethodScope, readonly string[]> = {
  read: ["operator.admin", "operator.write", "operator.read"],
  write: ["operator.admin", "operator.write"],
  admin: ["operator.admin"],
  approvals: ["operator.admin", "operator.approvals"],
};

export function requiredScope(scope: MethodScope): string {
  return `operator.${scope}`;
}

export function hasScope(granted: readonly string[], scope: MethodScope): boolean {
  return satisfying[scope].some((s) => granted.includes(s));
}
