/**
 * Device identity (SPEC 14): an Ed25519 key pair. The client signs the payload string with the challenge nonce; the
 * gateway verifies it. Both ends build the payload with the same function, so they cannot drift apart. Two payload
 * versions exist: v3 binds the client's platform and device family; v2 (what OpenClaw's web Control UI signs) ends
 * at the nonce. The gateway expects v3 when the client sends a device family, v2 otherwise.
 */
import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from "node:crypto";

/** DER SPKI header of an Ed25519 public key; the raw 32 key bytes follow it. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

// the payloads are built in a module without node:crypto, so the web console signs exactly what is verified here
export {
  type DeviceAuthFields,
  deviceAuthPayload,
  deviceAuthPayloadFor,
  deviceAuthPayloadV2,
  devicePayloadVersion,
} from "./device-payload.js";

export function deviceIdForPublicKey(raw: Buffer): string {
  return createHash("sha256").update(raw).digest("hex");
}

/** base64url → raw 32-byte key, or undefined when it is not one. */
export function decodeDevicePublicKey(publicKey: string): Buffer | undefined {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(publicKey)) return undefined;
  const raw = Buffer.from(publicKey, "base64url");
  return raw.length === 32 ? raw : undefined;
}

export function ed25519PublicKeyFromRaw(raw: Buffer): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: "der", type: "spki" });
}

export function verifyDeviceSignature(raw: Buffer, payload: string, signature: string): boolean {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(signature)) return false;
  const sig = Buffer.from(signature, "base64url");
  if (sig.length !== 64) return false;
  try {
    return verify(null, Buffer.from(payload, "utf8"), ed25519PublicKeyFromRaw(raw), sig);
  } catch {
    return false;
  }
}

export interface DeviceIdentity {
  /** hex SHA-256 of the raw public key */
  id: string;
  /** raw 32-byte Ed25519 public key, base64url */
  publicKey: string;
  /** base64url Ed25519 signature of the UTF-8 payload */
  sign(payload: string): string;
}

/** A fresh identity (tests, ephemeral clients). A persistent one can be built from a stored key with `deviceIdentityFromKey`. */
export function createDeviceIdentity(): DeviceIdentity {
  const { privateKey } = generateKeyPairSync("ed25519");
  return deviceIdentityFromKey(privateKey);
}

export function deviceIdentityFromKey(privateKey: KeyObject): DeviceIdentity {
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  const raw = spki.subarray(spki.length - 32);
  return {
    id: deviceIdForPublicKey(raw),
    publicKey: raw.toString("base64url"),
    sign: (payload) => sign(null, Buffer.from(payload, "utf8"), privateKey).toString("base64url"),
  };
}
