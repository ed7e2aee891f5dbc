import { isLoopbackHost } from "./bind.js";

/**
 * Which browser pages may talk to the gateway (the `Origin` header of a WebSocket upgrade). A page can open a
 * WebSocket to any address, so without this rule any site the user visits could drive a gateway on their machine.
 * Allowed: no Origin (not a browser), a loopback origin (a console or UI the user runs locally), the gateway's own
 * address (a page it serves itself), and the origins listed in `gateway.allowedOrigins`. Everything else is refused
 * at `connect`, with an error that names the setting.
 */
export function originRefusal(
  origin: string | undefined,
  opts: { allowedOrigins: readonly string[]; host: string | undefined },
): string | undefined {
  if (origin === undefined) return undefined;
  const normalized = normalizeOrigin(origin);
  if (normalized !== undefined) {
    if (opts.allowedOrigins.some((o) => normalizeOrigin(o) === normalized)) return undefined;
    const url = new URL(normalized);
    if (isLoopbackHost(url.hostname)) return undefined;
    if (opts.host !== undefined && url.host === opts.host.toLowerCase()) return undefined;
  } else if (opts.allowedOrigins.includes(origin)) {
    return undefined;
  }
  return `origin ${JSON.stringify(origin)} is not allowed: only loopback origins and those listed in gateway.allowedOrigins may connect (add it there to allow it)`;
}

/** scheme://host[:port] in lower case, default ports dropped; undefined for "null" and anything that is not a URL. */
function normalizeOrigin(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.origin === "null" ? undefined : url.origin.toLowerCase();
  } catch {
    return undefined;
  }
}
