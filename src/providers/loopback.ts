/** The host a baseUrl names, without IPv6 brackets; undefined when there is none or it is not a URL. */
export function baseUrlHost(baseUrl: string | undefined): string | undefined {
  if (!baseUrl) return undefined;
  try {
    return new URL(baseUrl).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return undefined;
  }
}

/**
 * A baseUrl on this machine or on a private network: loopback (localhost, 127/8, ::1), 10/8, 172.16/12, 192.168/16,
 * IPv6 unique-local fc00::/7, or an mDNS `.local` name. Such an endpoint is self-hosted, and may turn the model idle
 * watchdog off (`timeoutSeconds: 0`): a GPU box on the LAN is as much the user's own as one on localhost.
 */
export function isPrivateNetworkBaseUrl(baseUrl: string | undefined): boolean {
  const host = baseUrlHost(baseUrl)?.toLowerCase();
  if (host === undefined) return false;
  if (isLoopbackBaseUrl(baseUrl) || host.endsWith(".local")) return true;
  // fc00::/7: the first 7 bits are 1111110, so the first hextet is fc.. or fd..
  if (host.includes(":")) return /^f[cd][0-9a-f]{0,2}:/.test(host);
  const m = host.match(/^(\d+)\.(\d+)\.\d+\.\d+$/);
  if (!m) return false;
  const a = Number(m[1]);
  const b = Number(m[2]);
  return a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
}

/** A baseUrl on this machine: localhost, 127.0.0.0/8 or ::1. */
export function isLoopbackBaseUrl(baseUrl: string | undefined): boolean {
  const host = baseUrlHost(baseUrl);
  if (host === undefined) return false;
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
