import type { Duplex } from "node:stream";

/**
 * Counts connections that have not completed `connect`, in total and per remote address. Each one may cost up to
 * the pre-auth frame limit while it is being read; the caps bound what strangers can make the gateway hold at
 * once. A connection counts from its upgrade until it authenticates or closes.
 *
 * A full cap does not lock everyone out: idle sockets reopened as soon as they are closed would otherwise hold an
 * address's slots (the CLI and the console of that machine refused) or, from a few addresses, all of them. So when
 * a cap is reached the oldest connection that has sent nothing yet is closed to make room for the newcomer; a client
 * that means to connect sends its `connect` at once and is no longer silent. Only when every counted connection has
 * sent something is the newcomer refused.
 */
export interface PreAuthCaps {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/**
 * What admission needs of a connection: a way to close it when it is evicted to make room. The reason becomes a
 * WebSocket close reason, so it stays under that frame's 123 bytes.
 */
export type Evict = (reason: string) => void;

export interface PreAuthSlot {
  /** Call once the connection authenticated or closed; later calls do nothing. */
  release(): void;
  /** Call when the connection's first bytes arrive: from then on it is not evicted for a newcomer. */
  spoke(): void;
  /** whether it has sent nothing since its upgrade */
  readonly silent: boolean;
}

export type Admission = { ok: true; slot: PreAuthSlot } | { ok: false; reason: string };

interface Waiting {
  address: string;
  silent: boolean;
  evict: Evict;
  release(): void;
}

export class PreAuthAdmission {
  /** in admission order: the first silent one is the oldest */
  private readonly waiting = new Set<Waiting>();
  private readonly byAddress = new Map<string, number>();
  /** connections closed to make room, since start */
  evicted = 0;

  constructor(private readonly caps: PreAuthCaps) {}

  get pending(): number {
    return this.waiting.size;
  }

  admit(address: string, evict: Evict): Admission {
    const perAddress = this.caps.maxConnectionsPerAddress;
    if ((this.byAddress.get(address) ?? 0) >= perAddress) {
      const room = this.makeRoom(
        (w) => w.address === address,
        `closed for a newcomer: silent while this address's unauthenticated slots were full (limit ${perAddress})`,
      );
      if (!room) {
        return {
          ok: false,
          reason: `too many unauthenticated connections from this address (limit ${perAddress})`,
        };
      }
    }
    const total = this.caps.maxConnections;
    if (this.waiting.size >= total) {
      const room = this.makeRoom(
        () => true,
        `closed for a newcomer: silent while the gateway's unauthenticated slots were full (limit ${total})`,
      );
      if (!room) return { ok: false, reason: `too many unauthenticated connections (limit ${total})` };
    }
    return { ok: true, slot: this.add(address, evict) };
  }

  /** Releases the oldest silent connection `among` admits, then closes it; false when there is none. */
  private makeRoom(among: (w: Waiting) => boolean, reason: string): boolean {
    for (const w of this.waiting) {
      if (!w.silent || !among(w)) continue;
      // released first: the slot is the newcomer's whether or not closing the old socket releases it
      w.release();
      this.evicted++;
      w.evict(reason);
      return true;
    }
    return false;
  }

  private add(address: string, evict: Evict): PreAuthSlot {
    this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1);
    let released = false;
    const entry: Waiting = {
      address,
      silent: true,
      evict,
      release: () => {
        if (released) return;
        released = true;
        this.waiting.delete(entry);
        const left = (this.byAddress.get(address) ?? 1) - 1;
        if (left > 0) this.byAddress.set(address, left);
        else this.byAddress.delete(address);
      },
    };
    this.waiting.add(entry);
    return {
      release: entry.release,
      spoke: () => {
        entry.silent = false;
      },
      get silent() {
        return entry.silent;
      },
    };
  }
}

/**
 * Marks the slot as spoken at the socket's first bytes (the upgrade's leftover `head` counts), and calls `onSilent`
 * if none came within `ms`. Any bytes at all count: a client that is sending its `connect` is not silent.
 */
export function watchSilence(
  socket: Duplex,
  head: Buffer,
  slot: PreAuthSlot,
  ms: number,
  onSilent: () => void,
): { stop(): void } {
  if (head.length > 0) {
    slot.spoke();
    return { stop: () => {} };
  }
  const timer = setTimeout(() => {
    if (slot.silent) onSilent();
  }, ms);
  timer.unref();
  const onData = () => {
    slot.spoke();
    clearTimeout(timer);
  };
  socket.once("data", onData);
  return {
    stop: () => {
      clearTimeout(timer);
      socket.off("data", onData);
    },
  };
}
