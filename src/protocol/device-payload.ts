/**
 * The v3 device-auth payload (SPEC 14): the string a client signs with its device key and the gateway verifies. It
 * lives apart from device.ts (which needs node:crypto) so that every client builds it with this one function: the
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

/** `v3|<id>|<client.id>|<client.mode>|<role>|<scopes,>|<signedAt>|<token>|<nonce>|<platform>|<deviceFamily>` */
export function deviceAuthPayload(f: DeviceAuthFields): string {
  return [
    "v3",
    f.deviceId,
    f.clientId,
    f.clientMode,
    f.role,
    f.scopes.join(","),
    String(f.signedAt),
    f.token,
    f.nonce,
    f.platform,
    f.deviceFamily.toLowerCase(),
  ].join("|");
}
