/**
 * The console's device identity (SPEC 14): an Ed25519 key pair made once with WebCrypto and kept in IndexedDB. The
 * private key is not extractable, so the page can sign with it but never read it. A browser without WebCrypto
 * Ed25519 (or without IndexedDB) connects without a device block; the gateway accepts that. The signed string is
 * built by the gateway's own function (src/protocol/device-payload.ts; v3, since the console names its device
 * family), bundled in.
 */

export { deviceAuthPayloadFor } from "../../src/protocol/device-payload";

export interface DeviceIdentity {
  /** hex SHA-256 of the raw public key */
  id: string;
  /** raw 32-byte public key, base64url */
  publicKey: string;
  /** base64url Ed25519 signature of the UTF-8 text */
  sign(text: string): Promise<string>;
}

const DB = "loopgate-console";
const STORE = "device";
const KEY = "ed25519";

export function base64url(bytes: ArrayBuffer | Uint8Array): string {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let bin = "";
  for (const b of u8) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function hex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function openDb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function idb<T>(db: IDBDatabase, mode: IDBTransactionMode, op: (s: IDBObjectStore) => IDBRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = op(db.transaction(STORE, mode).objectStore(STORE));
    req.onsuccess = () => resolve(req.result as T);
    req.onerror = () => reject(req.error);
  });
}

async function loadOrCreateKeys(): Promise<CryptoKeyPair> {
  const db = await openDb();
  try {
    const stored = await idb<CryptoKeyPair | undefined>(db, "readonly", (s) => s.get(KEY));
    if (stored?.privateKey && stored.publicKey) return stored;
    const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"])) as CryptoKeyPair;
    await idb(db, "readwrite", (s) => s.put(pair, KEY));
    return pair;
  } finally {
    db.close();
  }
}

let cached: Promise<DeviceIdentity | undefined> | undefined;

/** The identity, made on first use; undefined where the browser cannot keep one. */
export function deviceIdentity(): Promise<DeviceIdentity | undefined> {
  cached ??= (async () => {
    if (!globalThis.crypto?.subtle || !globalThis.indexedDB) return undefined;
    try {
      const pair = await loadOrCreateKeys();
      const raw = await crypto.subtle.exportKey("raw", pair.publicKey);
      const id = hex(await crypto.subtle.digest("SHA-256", raw));
      return {
        id,
        publicKey: base64url(raw),
        sign: async (text: string) =>
          base64url(await crypto.subtle.sign({ name: "Ed25519" }, pair.privateKey, new TextEncoder().encode(text))),
      };
    } catch {
      // no Ed25519 in this browser, or storage refused (private mode): connect without a device block
      return undefined;
    }
  })();
  return cached;
}
