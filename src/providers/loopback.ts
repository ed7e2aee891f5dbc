/** The host a baseUrl names, without IPv6 brackets; undefined when there is none or it is not a URL. */
export function baseUrlHost(baseUrl: string | undefined): string | undefined {
  if (!baseUrl) return undefined;
  try {
    return new URL(baseUrl).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return undefined;
  }
}

/** A baseUrl on this machine: localhost, 127.0.0.0/8 or ::1. */
export function isLoopbackBaseUrl(baseUrl: string | undefined): boolean {
  const host = baseUrlHost(baseUrl);
  if (host === undefined) return false;
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
