/**
 * Counts connections past `connect`, in total and per token, so that authenticated clients (a runaway bridge, a
 * console opened in a thousand tabs) cannot make the gateway hold sockets, subscriptions and send queues without
 * bound. A token is its grant: each `gateway.auth.tokens[]` entry is one, the single `gateway.auth.token` (or no
 * token on loopback) another. A connection counts from its `connect` until it closes.
 */
import { ErrorCodes, type ErrorShape } from "../protocol/frames.js";

export interface ConnectionCaps {
  maxConnections: number;
  maxConnectionsPerToken: number;
}

export type ConnectionAdmission = { ok: true; release: () => void } | { ok: false; error: ErrorShape };

export class AuthenticatedConnections {
  private total = 0;
  private readonly byToken = new Map<object, number>();

  constructor(private readonly caps: ConnectionCaps) {}

  get count(): number {
    return this.total;
  }

  /** `token`: the grant the connection authenticated with (compared by identity, never the secret itself) */
  admit(token: object): ConnectionAdmission {
    const ofToken = this.byToken.get(token) ?? 0;
    if (this.total >= this.caps.maxConnections) {
      return refused(`${this.total} connections are open (gateway.maxConnections is ${this.caps.maxConnections})`);
    }
    if (ofToken >= this.caps.maxConnectionsPerToken) {
      return refused(
        `${ofToken} connections with this token are open (gateway.maxConnectionsPerToken is ${this.caps.maxConnectionsPerToken})`,
      );
    }
    this.total++;
    this.byToken.set(token, ofToken + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.total--;
        const left = (this.byToken.get(token) ?? 1) - 1;
        if (left > 0) this.byToken.set(token, left);
        else this.byToken.delete(token);
      },
    };
  }
}

function refused(why: string): { ok: false; error: ErrorShape } {
  return {
    ok: false,
    error: {
      code: ErrorCodes.unavailable,
      message: `connect refused: ${why}; close another connection first, or retry later`,
      retryable: true,
    },
  };
}
