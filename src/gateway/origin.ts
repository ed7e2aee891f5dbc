import { networkInterfaces } from "node:os";
import { isLoopbackHost } from "./bind.js";

/**
 * Which browser pages may reach the gateway (SPEC 21, "browser connections"). A page can send requests and open
 * WebSockets to any address, and a page whose DNS name was rebound to 127.0.0.1 reaches a loopback gateway with
 * its own name in `Host` and `Origin` (`evil.example:<port>`). So both headers are checked against names this
 * gateway knows, never against each other:
 * - `Host` of every HTTP request and upgrade must name a loopback host, the bind address (any interface address
 *   when bound to all of them) or a host of `gateway.allowedOrigins`; anything else is refused with HTTP 421.
 * - `Origin` (browsers send it on every WebSocket) must be loopback, the gateway's own address, or listed.
 * - A browser connection gets a tokenless grant only from the gateway's own page or a listed origin: any other
 *   loopback page (another local dev server, say) must present the token, which a tokenless gateway does not have.
 */
export interface BrowserAccessOptions {
  /** the address the gateway listens on (127.0.0.1, 0.0.0.0, a name) */
  bindHost: string;
  /** the port it listens on, known once it does */
  port: () => number;
  allowedOrigins: readonly string[];
}

const HOST_HEADER = /^(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;
const ALL_INTERFACES = new Set(["0.0.0.0", "::", "[::]"]);

export class BrowserAccess {
  private readonly listedOrigins: Set<string>;
  private readonly listedHosts: Set<string>;
  private readonly wildcard: boolean;
  private readonly bindHost: string;

  constructor(private readonly opts: BrowserAccessOptions) {
    const normalized = opts.allowedOrigins.map((o) => normalizeOrigin(o) ?? o);
    this.listedOrigins = new Set(normalized);
    this.listedHosts = new Set(
      normalized.flatMap((o) => {
        const url = parseUrl(o);
        return url ? [bare(url.hostname)] : [];
      }),
    );
    this.bindHost = bare(opts.bindHost.toLowerCase());
    this.wildcard = ALL_INTERFACES.has(opts.bindHost);
  }

  /**
   * Why a request with this `Host` header is refused, or undefined when it may be served. No header at all is not
   * a browser (every browser sends one), so it passes.
   */
  hostRefusal(host: string | undefined): string | undefined {
    if (host === undefined) return undefined;
    // a name or an IP literal and a port, nothing a URL parser would read as userinfo or a path
    const url = HOST_HEADER.test(host) ? parseUrl(`http://${host}`) : undefined;
    const name = url ? bare(url.hostname) : undefined;
    if (name !== undefined && (isLoopbackHost(name) || this.isOwnHostname(name) || this.listedHosts.has(name))) {
      return undefined;
    }
    return `host ${JSON.stringify(host)} is not allowed: this gateway answers only to loopback names, its bind address and the hosts of gateway.allowedOrigins (add the page's origin there to allow it)`;
  }

  /**
   * Why a WebSocket with this `Origin` may not connect, or undefined. `tokenRequired`: whether `connect` will have
   * to present a token; without one only the gateway's own page and listed origins get in.
   */
  originRefusal(origin: string | undefined, tokenRequired: boolean): string | undefined {
    if (origin === undefined) return undefined;
    const normalized = normalizeOrigin(origin);
    if (this.listedOrigins.has(normalized ?? origin)) return undefined;
    const url = normalized === undefined ? undefined : parseUrl(normalized);
    if (url && this.isOwnOrigin(url)) return undefined;
    if (url && isLoopbackHost(url.hostname)) {
      if (tokenRequired) return undefined;
      return `origin ${JSON.stringify(origin)} may not connect to a gateway without a token: a browser page other than the gateway's own gets in only when gateway.allowedOrigins lists its origin (or set gateway.auth.token and have it sign in)`;
    }
    return `origin ${JSON.stringify(origin)} is not allowed: only loopback origins and those listed in gateway.allowedOrigins may connect (add it there to allow it)`;
  }

  /**
   * The gateway's own page: served by this process on this port. A rebound page cannot claim it, since a browser's
   * Origin carries the name the page was loaded from, not the address it resolved to.
   */
  private isOwnOrigin(url: URL): boolean {
    const port = url.port === "" ? 80 : Number(url.port);
    if (url.protocol !== "http:" || port !== this.opts.port()) return false;
    const name = bare(url.hostname);
    return name === "localhost" || this.isOwnHostname(name);
  }

  /** the bind address, or with a bind to all interfaces, any address of this machine's interfaces */
  private isOwnHostname(name: string): boolean {
    if (name === this.bindHost) return true;
    if (!this.wildcard) return false;
    return Object.values(networkInterfaces()).some((list) => list?.some((i) => i.address.toLowerCase() === name));
  }
}

/** scheme://host[:port] in lower case, default ports dropped; undefined for "null" and anything that is not a URL. */
function normalizeOrigin(origin: string): string | undefined {
  const url = parseUrl(origin);
  if (!url || url.origin === "null") return undefined;
  return url.origin.toLowerCase();
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** an IPv6 literal without its brackets, as interfaces and bind addresses spell it */
function bare(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, "");
}
