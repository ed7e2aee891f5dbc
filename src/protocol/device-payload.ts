/**
 * The device-auth payloads (SPEC 14): the string a client signs with its device key and the gateway verifies. They
 * live apart from device.ts (which needs node:crypto) so that every client builds them with these functions: the
 * CLI's client, the gateway's check, and the web console in the browser.
 */

export interface DeviceAuthFields {
  deviceId: string;
  clientId: string;
  clientMode: string;
  role: string;
  scopes: readonly string[];
  signedAt: number;
  token: string;
  nonce: string;
  platform: string;
  deviceFamily: string;
}

/**
 * Which payload a connect's signature covers: v3 when the client names its device family, v2 otherwise (what a
 * client signs; without a family the gateway also accepts v3 with an empty family, which some clients sign).
 */
export function devicePayloadVersion(deviceFamily: string | undefined): "v2" | "v3" {
  return deviceFamily ? "v3" : "v2";
}

/** The fields v2 and v3 share, in their order: `<id>|<client.id>|<client.mode>|<role>|<scopes,>|<signedAt>|<token>|<nonce>` */
function commonFields(f: Omit<DeviceAuthFields, "platform" | "deviceFamily">): string[] {
  return [f.deviceId, f.clientId, f.clientMode, f.role, f.scopes.join(","), String(f.signedAt), f.token, f.nonce];
}

/** `v2|<id>|<client.id>|<client.mode>|<role>|<scopes,>|<signedAt>|<token>|<nonce>` (no platform, no device family) */
export function deviceAuthPayloadV2(f: Omit<DeviceAuthFields, "platform" | "deviceFamily">): string {
  return ["v2", ...commonFields(f)].join("|");
}

/** The payload a client with these fields signs and the gateway verifies: v3 with a device family, v2 without. */
export function deviceAuthPayloadFor(f: DeviceAuthFields): string {
  return devicePayloadVersion(f.deviceFamily) === "v3" ? deviceAuthPayload(f) : deviceAuthPayloadV2(f);
}

/** `v3|<id>|<client.id>|<client.mode>|<role>|<scopes,>|<signedAt>|<token>|<nonce>|<platform>|<deviceFamily>` */
export function deviceAuthPayload(f: DeviceAuthFields): string {
  return ["v3", ...commonFields(f), f.platform, f.deviceFamily.toLowerCase()].join("|");
}
